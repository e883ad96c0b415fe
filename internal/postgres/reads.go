package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// With a read replica, reads survive either server: they go to the standby
// while it answers, to the primary when it does not, and back to the
// standby as soon as it answers again, without a restart.
//
// This is a fallback pool, not pgx's multi-host DSN with
// target_session_attrs=prefer-standby, because the multi-host DSN chooses a
// server when a connection is dialled, not when a query runs: the
// connections it opened on the primary while the standby was down stay
// there until the pool retires them (MaxConnLifetime, an hour by default),
// and a read on a connection to the standby that just stopped fails instead
// of going elsewhere. BenchmarkStandbyReturn measures both.
//
// Two things move reads:
//   - a read that gets no answer from its server (see unanswered) is run
//     again, at once, on the other one; when that server was the standby,
//     it is marked down, and reads go to the primary first;
//   - a watcher pings the standby every standbyProbeInterval over a
//     connection of its own (so that a busy pool cannot make it late) and
//     marks it up or down; reads go back to the standby within one interval
//     of its return, and leave a standby that hangs rather than refuses
//     within one probe timeout.
//
// A server that stops ends every connection to it, the idle ones in the
// pools included, and pgxpool checks an idle connection before handing it
// out only when it has been idle for over a second (its ShouldPing). So a
// server that was stopped and is back within that second would get, from
// each such connection, one more read that fails on the old server's
// goodbye (57P01): the read falls back to the other server, and when that
// one is down too (the primary stopped just after the standby returned),
// it fails although the standby answers. Two things prevent it:
//   - a read that fails on a connection that was open (not while dialling)
//     resets its pool, so that the pool's other connections to that server
//     go with it (see dropEnded); when the other server does not answer
//     either, the read runs once more on the first, over a fresh connection;
//   - the standby's pool is reset whenever the standby is marked down, by
//     a read or by the watcher, and when the watcher's own connection
//     ends; then the watcher dials again within the same probe, so that a
//     standby that restarted between two probes is seen up, without its
//     old connections.

const (
	standbyProbeInterval = 500 * time.Millisecond
	standbyProbeTimeout  = time.Second
)

// readRoute says where reads go; it is shared by the Store's reads and its
// watcher.
type readRoute struct {
	mu   sync.Mutex
	down bool // the standby did not answer; reads go to the primary first
	log  *slog.Logger
	pool *pgxpool.Pool // the standby's, which the watcher resets

	stop context.CancelFunc
	done chan struct{} // closed when the watcher has returned
}

// reading runs fn, which must do the whole read (query, scan, rows.Err), on
// the pool that reads go to, and again on the other when the first gave no
// answer. When neither answered and the first failed on a connection that
// was open, fn runs a third time, on the first pool again: its server may
// have ended that connection by restarting, and answers a fresh one (the
// pool was reset). fn may run three times, so it must start from scratch
// each time.
func (s *Store) reading(ctx context.Context, fn func(db *pgxpool.Pool) error) error {
	if s.route == nil {
		return fn(s.primary)
	}
	first, second := s.read, s.primary
	if s.route.isDown() {
		first, second = second, first
	}
	err := fn(first)
	if err == nil || !unanswered(ctx, err) {
		return err
	}
	ended := dropEnded(first, err)
	if first == s.read {
		s.route.mark(false, err)
	}
	answered := second
	err = fn(second)
	if err != nil && unanswered(ctx, err) {
		dropEnded(second, err)
		if ended {
			answered = first
			err = fn(first)
		}
	}
	if err == nil && answered == s.read {
		s.route.mark(true, nil)
	}
	return err
}

// dropEnded resets pool when err, which gave no answer, came over a
// connection that was open rather than while dialling one, and tells
// whether it did. The server ended that connection (it is stopping, or it
// stopped and is back) or the connection broke; either way the pool's other
// connections to it, opened before, most likely went the same way, and the
// idle ones would each fail one more read (see the top of this file). A
// failure to dial leaves the pool alone: its connections, if any, may be
// sound (too_many_connections), and a down server has none to drop.
func dropEnded(pool *pgxpool.Pool, err error) bool {
	if _, dialling := errors.AsType[*pgconn.ConnectError](err); dialling {
		return false
	}
	pool.Reset()
	return true
}

func (r *readRoute) isDown() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.down
}

// mark records whether the standby answers, and logs each change. When the
// standby is marked down, its pool is reset: the connections it holds are
// to a server that does not answer, and would be handed out again, one
// failed read each, when it is back (see the top of this file).
func (r *readRoute) mark(up bool, err error) {
	r.mu.Lock()
	changed := r.down == up
	r.down = !up
	r.mu.Unlock()
	switch {
	case changed && up:
		r.log.Info("postgres: the read replica answers again; reads go back to it")
	case changed:
		r.pool.Reset()
		r.log.Warn("postgres: the read replica does not answer; reads go to the primary until it does", "err", err)
	}
}

// watch pings the standby at every interval until ctx ends, over one
// connection of its own, dialled again after any failure.
func (r *readRoute) watch(ctx context.Context, cfg *pgx.ConnConfig) {
	defer close(r.done)
	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			conn.Close(context.Background())
		}
	}()
	tick := time.NewTicker(standbyProbeInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		pctx, cancel := context.WithTimeout(ctx, standbyProbeTimeout)
		var err error
		conn, err = r.probe(pctx, conn, cfg)
		cancel()
		if ctx.Err() != nil {
			return
		}
		r.mark(err == nil, err)
	}
}

// probe pings the standby over conn, or over a new connection when conn is
// nil, and returns the connection to ping over next time (nil after a
// failure). When conn fails, the standby ended it, or it broke: the
// standby stopped, or restarted since the last probe, and the pool's
// connections of that time are gone as well, so the pool is reset, and a
// fresh connection is dialled at once. A standby that restarted between
// two probes answers it and is not marked down; the dial shares ctx, the
// one probe timeout, so a standby that hangs is still marked down within
// it.
func (r *readRoute) probe(ctx context.Context, conn *pgx.Conn, cfg *pgx.ConnConfig) (*pgx.Conn, error) {
	if conn != nil {
		err := conn.Ping(ctx)
		if err == nil {
			return conn, nil
		}
		conn.Close(context.Background())
		r.pool.Reset()
		if ctx.Err() != nil {
			return nil, err
		}
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := conn.Ping(ctx); err != nil {
		conn.Close(context.Background())
		return nil, err
	}
	return conn, nil
}

// close stops the watcher and waits for it.
func (r *readRoute) close() {
	r.stop()
	<-r.done
}

// unanswered tells whether err means that the server did not answer the
// read, so that the other server may: it could not be reached, the
// connection broke, or the server is shutting down or starting up. An
// answer that is an error (a timeout of the statement, a bad query, no
// rows) is not, nor is any error once the caller's context has ended.
func unanswered(ctx context.Context, err error) bool {
	if ctx.Err() != nil || errors.Is(err, pgx.ErrNoRows) {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "57P01", "57P02", "57P03": // admin_shutdown, crash_shutdown, cannot_connect_now
			return true
		}
		// Class 08: connection exception; 53300: too_many_connections.
		return strings.HasPrefix(pgErr.Code, "08") || pgErr.Code == "53300"
	}
	var scanErr pgx.ScanArgError
	if errors.As(err, &scanErr) {
		return false
	}
	// No error from the server: refused, reset, closed, timed out dialling.
	return true
}

// countAssetsSince counts, newest first, up to $2 assets created at or after
// $1: a walk of assets_by_created's partitions that stops at the limit.
const countAssetsSince = `SELECT count(*), min(created_at) FROM (
	SELECT created_at FROM assets WHERE created_at >= $1
	ORDER BY created_at DESC, id DESC LIMIT $2) newest`

// CountAssetsSince counts the assets created at or after since, up to
// limit, on the primary, and returns the count and the oldest created_at
// counted.
func (s *Store) CountAssetsSince(ctx context.Context, since time.Time, limit int) (int, time.Time, error) {
	var n int
	var oldest *time.Time
	if err := s.primary.QueryRow(ctx, countAssetsSince, secondBefore(since), limit).Scan(&n, &oldest); err != nil {
		return 0, time.Time{}, fmt.Errorf("postgres: count assets: %w", err)
	}
	if oldest == nil {
		return 0, time.Time{}, nil
	}
	return n, oldest.UTC(), nil
}
