package postgres

import (
	"context"
	"errors"
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

	stop context.CancelFunc
	done chan struct{} // closed when the watcher has returned
}

// reading runs fn, which must do the whole read (query, scan, rows.Err), on
// the pool that reads go to, and again on the other when the first gave no
// answer. fn may run twice, so it must start from scratch each time.
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
	if first == s.read {
		s.route.mark(false, err)
	}
	if err2 := fn(second); err2 != nil {
		return err2
	}
	if second == s.read {
		s.route.mark(true, nil)
	}
	return nil
}

func (r *readRoute) isDown() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.down
}

// mark records whether the standby answers, and logs each change.
func (r *readRoute) mark(up bool, err error) {
	r.mu.Lock()
	changed := r.down == up
	r.down = !up
	r.mu.Unlock()
	switch {
	case changed && up:
		r.log.Info("postgres: the read replica answers again; reads go back to it")
	case changed:
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
		if conn == nil {
			conn, err = pgx.ConnectConfig(pctx, cfg)
		}
		if err == nil {
			err = conn.Ping(pctx)
		}
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil && conn != nil {
			conn.Close(context.Background())
			conn = nil
		}
		r.mark(err == nil, err)
	}
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
