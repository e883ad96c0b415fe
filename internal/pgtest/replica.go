package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// StartReplica starts a hot-standby streaming replica of c: a base backup
// taken with pg_basebackup -R, which writes the primary_conninfo and the
// standby.signal that make the new cluster follow c. The replica answers
// read-only queries on its own port, and tb may stop and restart it. It is
// stopped and deleted when tb ends, before c if c was started in tb too.
//
// Databases created on c after the backup reach the replica through the
// stream as well; CreateDatabase on the replica creates on c and waits.
func (c *Cluster) StartReplica(tb testing.TB) *Cluster {
	tb.Helper()
	if c.primary != nil {
		tb.Fatalf("pgtest: StartReplica on a replica; cascading is not supported")
	}
	r, err := c.newReplica()
	if err != nil {
		tb.Fatalf("pgtest: start replica: %v", err)
	}
	tb.Cleanup(func() {
		if err := r.destroy(); err != nil {
			tb.Errorf("pgtest: replica: %v", err)
		}
	})
	return r
}

// newReplica takes a base backup of c and starts a server on it.
func (c *Cluster) newReplica() (*Cluster, error) {
	dir, err := c.env.makeDir("pgtest-replica-")
	if err != nil {
		return nil, err
	}
	r := &Cluster{env: c.env, dir: dir, primary: c}
	err = c.env.run("pg_basebackup",
		"-h", "127.0.0.1", "-p", strconv.Itoa(c.port), "-U", "postgres",
		"-D", r.dataDir(),
		"-R",           // write the standby configuration
		"-X", "stream", // include the WAL written during the backup
		"-c", "fast", // checkpoint now rather than wait for one
		"--no-sync", // throwaway: nothing to make durable
	)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := r.startOnFreePort(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return r, nil
}

// Primary returns the cluster a replica streams from, or nil for a primary.
func (c *Cluster) Primary() *Cluster { return c.primary }

// WaitReplay waits until the replica c has replayed everything its primary
// had written when WaitReplay was called, so that a test's writes are
// visible on the replica. It returns ctx's error if that takes too long, and
// fails at once on a primary.
func (c *Cluster) WaitReplay(ctx context.Context) error {
	if c.primary == nil {
		return errors.New("WaitReplay on a primary")
	}
	// The insert position, not the write position: with asynchronous commit
	// a committed transaction's WAL may still sit in the primary's buffers.
	var lsn string
	if err := c.primary.queryRow(ctx, `SELECT pg_current_wal_insert_lsn()::text`, nil, &lsn); err != nil {
		return fmt.Errorf("primary WAL position: %w", err)
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		var done bool
		err := c.queryRow(ctx, `SELECT coalesce(pg_last_wal_replay_lsn() >= $1::pg_lsn, false)`, []any{lsn}, &done)
		if err == nil && done {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("replica has not replayed up to %s: %w (last error: %v)", lsn, ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// queryRow runs a one-row query on the postgres database of c.
func (c *Cluster) queryRow(ctx context.Context, sql string, args []any, dest ...any) error {
	conn, err := pgx.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return conn.QueryRow(ctx, sql, args...).Scan(dest...)
}
