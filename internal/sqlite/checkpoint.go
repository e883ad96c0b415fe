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
// So every Store also runs a checkpointer. Every walCheckInterval it looks at
// the size of the -wal file; over walTruncateBytes, it runs
// wal_checkpoint(TRUNCATE) on the writer's connection: that copies every
// frame, waits for the readers still reading older frames, which take
// milliseconds, and empties the file. While it waits it holds the write
// lock, so writers (of this process or another) wait too, for as long;
// readers never do: a reader that begins meanwhile reads the database file.
//
// It waits at most walCheckpointWait for the write lock, not the writer's
// busy_timeout: while it waits it holds the checkpoint lock, which would
// keep every other process's checkpoints out. When a writer elsewhere
// writes back to back (`cdnapi follow` catching up), the checkpoint of
// serve gives up at once and the follower's own checkpointer, which runs
// between its transactions, gets the lock. A checkpoint that cannot finish
// is tried again at the next look; it is not an error anyone sees.
//
// Under scripts/soak (deep pages, 5,000 asset rows/s, the pruner), the WAL
// grew at up to 25 MiB/s (a commit rewrites whole 16 KiB pages of the
// random-keyed indexes); a look every 250 ms above 24 MiB keeps it under
// 64 MiB.
const (
	walCheckInterval  = 250 * time.Millisecond
	walTruncateBytes  = 24 << 20
	walCheckpointWait = 100 * time.Millisecond
)

// checkpointer truncates a WAL that grew past its limit.
type checkpointer struct {
	stop context.CancelFunc
	done chan struct{}
}

// startCheckpointer watches the WAL of the database at path, checkpointing
// through write, whose busy_timeout is busy, every interval that finds it
// over limit bytes, until stopped.
func startCheckpointer(path string, write *sql.DB, busy time.Duration, interval time.Duration, limit int64) *checkpointer {
	ctx, stop := context.WithCancel(context.Background())
	c := &checkpointer{stop: stop, done: make(chan struct{})}
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
			if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > limit {
				truncateWAL(ctx, write, busy)
			}
		}
	}()
	return c
}

// truncateWAL runs one TRUNCATE checkpoint on the writer's connection, with
// a busy_timeout of walCheckpointWait for its length, and tells whether it
// finished.
func truncateWAL(ctx context.Context, write *sql.DB, busy time.Duration) bool {
	conn, err := write.Conn(ctx)
	if err != nil {
		return false
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA busy_timeout = %d", walCheckpointWait.Milliseconds())); err != nil {
		return false
	}
	var done, frames, copied int
	err = conn.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&done, &frames, &copied)
	// The writer's own busy_timeout comes back before anyone else uses the
	// connection; if it cannot, the connection must not be used again.
	if _, rerr := conn.ExecContext(context.WithoutCancel(ctx), fmt.Sprintf("PRAGMA busy_timeout = %d", busy.Milliseconds())); rerr != nil {
		conn.Raw(func(any) error { return driver.ErrBadConn })
	}
	return err == nil && done == 0
}

// close stops the checkpointer and waits for it.
func (c *checkpointer) close() {
	c.stop()
	<-c.done
}
