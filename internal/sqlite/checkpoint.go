package sqlite

import (
	"context"
	"database/sql"
	"os"
	"time"
)

// The WAL's checkpoint policy, kept here, apart from the writer.
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
// wal_checkpoint(TRUNCATE) on the writer: that copies every frame, waits
// (within busy_timeout) for the readers still reading older frames, which
// take milliseconds, and empties the file. While it waits it holds the
// write lock, so writers (of this process or another) wait too, for as
// long; readers never do: a reader that begins meanwhile reads the database
// file. A checkpoint that cannot finish (another process checkpoints, a
// reader outlives busy_timeout) is tried again at the next look; it is
// not an error anyone sees. The WAL then stays near walTruncateBytes plus
// what is written in walCheckInterval: under the soak's load, below 64 MiB.
const (
	walCheckInterval = time.Second
	walTruncateBytes = 32 << 20
)

// checkpointer truncates a WAL that grew past walTruncateBytes.
type checkpointer struct {
	stop context.CancelFunc
	done chan struct{}
}

// startCheckpointer watches the WAL of the database at path, checkpointing
// through write, until stopped.
func startCheckpointer(path string, write *sql.DB) *checkpointer {
	ctx, stop := context.WithCancel(context.Background())
	c := &checkpointer{stop: stop, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		tick := time.NewTicker(walCheckInterval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > walTruncateBytes {
				truncateWAL(ctx, write)
			}
		}
	}()
	return c
}

// truncateWAL runs one TRUNCATE checkpoint and tells whether it finished.
func truncateWAL(ctx context.Context, write *sql.DB) bool {
	var busy, frames, copied int
	err := write.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &frames, &copied)
	return err == nil && busy == 0
}

// close stops the checkpointer and waits for it.
func (c *checkpointer) close() {
	c.stop()
	<-c.done
}
