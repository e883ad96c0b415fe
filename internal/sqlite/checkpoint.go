package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"os"
	"time"
)

// The WAL's checkpoint policy, kept here, apart from the writer (issue 21).
//
// SQLite's own policy is a PASSIVE checkpoint after a commit that leaves the
// WAL over 1000 pages (16 MiB with our 16 KiB pages): it copies into the
// database the frames no reader still needs, and never waits. The WAL file
// starts over from its beginning only when a write begins after a
// checkpoint copied every frame and no reader is still reading from the
// WAL. Under constant reads some reader nearly always is, so the file only
// grows: scripts/soak (deep pages, and 5,000 asset rows/s through `cdnapi
// follow`) saw it pass 100 MiB in 75 s.
//
// So every Store checkpoints the WAL itself, in two places: a commit that
// leaves the -wal file over walTruncateBytes checkpoints before it returns,
// and a checkpointer looks at its size every walCheckInterval, for the WAL
// that other processes' commits grew. Looking only every interval let
// back-to-back transactions (the pruner's batches, each rewriting up to
// 16 MiB of pages of the random asset ids' index) add to the WAL in the
// meantime: under scripts/soak it reached 69 MiB. Either checkpoints in
// two steps on the writer's connection:
//   - PASSIVE first, which copies the frames into the database without
//     taking the write lock: the bulk of the work, during which writers go
//     on;
//   - then TRUNCATE, which copies what was written meanwhile, waits for the
//     readers still reading older frames (they take milliseconds) and
//     empties the file. It holds the write lock throughout, so writers of
//     this process or another wait that long; readers never do: a reader
//     that begins meanwhile reads the database file. Run alone, TRUNCATE
//     copied the whole WAL under the write lock, and under the soak's load
//     the pruner's BEGIN waited past busy_timeout for it: SQLITE_BUSY.
//
// TRUNCATE waits at most walCheckpointWait for the write lock, not the
// writer's busy_timeout: while it waits it holds the checkpoint lock,
// which would keep every other process's checkpoints out. When a writer
// elsewhere writes back to back (`cdnapi follow` catching up), serve's
// checkpoint gives up at once and the follower's own checkpointer, which
// runs between its transactions, gets the lock. A checkpoint that cannot
// finish is tried again at the next look; it is not an error anyone sees.
//
// A checkpoint that cannot finish leaves the WAL to the next commit, and
// commits that follow one another each add their transaction to it: an
// hour of scripts/soak saw it pass 64 MiB once (79.6 MiB, median 7 MiB)
// while the follower was 0.24 s behind, so with small batches. So a
// transaction does not begin while the WAL is over the limit: its writer
// checkpoints first, and tries again every walRetryEvery for up to
// walWriterWait, after which it writes anyway rather than stall behind a
// long reader (a backup reads one snapshot for as long as it copies).
// Writers wait for readers this way; readers still never wait for
// writers.
//
// The WAL is then bounded by walTruncateBytes and the transactions that
// began before it passed the limit: the one that passed it, and one of
// another process already waiting for the write lock. A transaction of
// assets rewrites a page of the random asset ids' index for nearly every
// row: one upsert of new assets into a table of 650,000, with 16 KiB
// pages, wrote 14 MiB of WAL for 1,000 rows, 27 MiB for 3,000 and 36 MiB
// (the whole index and then some) for 10,000 (a scratch program, not
// kept); with 4 KiB pages, 5, 13 and 28 MiB (see pageSize for why they
// are 16 KiB). The limit is SQLite's own, 16 MiB: 24 MiB left the soak's
// WAL too little room under 64 MiB.
const (
	walCheckInterval  = 250 * time.Millisecond
	walTruncateBytes  = 16 << 20
	walCheckpointWait = 100 * time.Millisecond
	walWriterWait     = time.Second
	walRetryEvery     = 25 * time.Millisecond
)

// checkpointer truncates a WAL that grew past its limit.
type checkpointer struct {
	path  string  // the database file; its WAL is path + "-wal"
	write *sql.DB // the writer, whose busy_timeout is busy
	busy  time.Duration
	limit int64
	// writerWait is how long a transaction waits, at most, for a WAL over
	// the limit to be emptied before it begins.
	writerWait time.Duration
	stop       context.CancelFunc
	done       chan struct{}
}

// startCheckpointer watches the WAL of the database at path, checkpointing
// through write, whose busy_timeout is busy, every interval that finds it
// over limit bytes, until stopped.
func startCheckpointer(path string, write *sql.DB, busy time.Duration, interval time.Duration, limit int64) *checkpointer {
	ctx, stop := context.WithCancel(context.Background())
	c := &checkpointer{path: path, write: write, busy: busy, limit: limit, writerWait: walWriterWait, stop: stop, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			c.check(ctx)
		}
	}()
	return c
}

// check truncates the WAL if it is over the limit. The writer calls it after
// each commit: a stat, a microsecond, when the WAL is small.
func (c *checkpointer) check(ctx context.Context) {
	if c.over() {
		c.truncate(ctx)
	}
}

// beforeWrite holds a transaction back while the WAL is over the limit,
// checkpointing it, for at most writerWait or until ctx ends. The writer
// calls it before each BEGIN, on the connection the transaction will use.
func (c *checkpointer) beforeWrite(ctx context.Context) {
	if !c.over() {
		return
	}
	deadline := time.Now().Add(c.writerWait)
	for {
		c.truncate(ctx)
		if !c.over() || time.Now().After(deadline) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(walRetryEvery):
		}
	}
}

// over reports whether the WAL is over the limit.
func (c *checkpointer) over() bool {
	fi, err := os.Stat(c.path + "-wal")
	return err == nil && fi.Size() > c.limit
}

// truncate runs a PASSIVE checkpoint then a TRUNCATE one on the writer's
// connection, the second with a busy_timeout of walCheckpointWait. Once it
// holds the connection it looks at the WAL again: a checkpoint that ran
// while it waited may have done the work. One that cannot finish is tried
// again later, so its errors go nowhere.
func (c *checkpointer) truncate(ctx context.Context) {
	conn, err := c.write.Conn(ctx)
	if err != nil {
		return
	}
	defer conn.Close()
	if !c.over() {
		return
	}
	if _, err := conn.ExecContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`); err != nil {
		return
	}
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA busy_timeout = %d", walCheckpointWait.Milliseconds())); err != nil {
		return
	}
	conn.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
	// The writer's own busy_timeout comes back before anyone else uses the
	// connection; if it cannot, the connection must not be used again.
	if _, err := conn.ExecContext(context.WithoutCancel(ctx), fmt.Sprintf("PRAGMA busy_timeout = %d", c.busy.Milliseconds())); err != nil {
		conn.Raw(func(any) error { return driver.ErrBadConn })
	}
}

// close stops the checkpointer and waits for it.
func (c *checkpointer) close() {
	c.stop()
	<-c.done
}
