package sqlite

import (
	"context"
	"database/sql"

	"github.com/cdnapi/cdnapi"
)

// Every read query of the Store first takes one of s.slots, of which there
// are as many as the read pool has connections, and gives it back once its
// rows are closed. A query that holds a slot therefore always finds a free
// connection in the pool, and only the wait for a slot needs ctx.
//
// That lets queryPage run a page without watching ctx. A context that can
// end costs each query two goroutines (database/sql's and the driver's,
// which interrupts SQLite) and a look at ctx on every step. In
// BenchmarkListFiles, whose reads carry a deadline as httpapi's do, a page
// without them took 0.79 of the time with them, run alone, and 0.86 with
// both cores busy (medians of five interleaved runs). A page is one
// range scan of at most cdnapi.MaxLimit rows, which SQLite has no use for
// interrupting, and a reader in WAL mode rarely waits for a lock, and then
// for busy_timeout at most; so nothing is lost but the watching.

// readRows are the rows of a read query; Close also gives back its slot.
type readRows struct {
	*sql.Rows
	slot chan struct{}
}

// Close closes the rows and gives back the slot. It is safe to call twice.
func (r *readRows) Close() error {
	err := r.Rows.Close()
	if r.slot != nil {
		<-r.slot
		r.slot = nil
	}
	return err
}

// acquire takes a read slot, waiting until one is free or ctx ends.
func (s *Store) acquire(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case s.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// stmt returns query prepared on the read pool. Parsing and planning cost
// about as much as reading a page of 20 rows, so each read query is
// prepared once; database/sql then prepares it on each pooled connection
// the first time that connection runs it. A query that fails to prepare,
// say before Migrate has created its table, is tried again next time. The
// caller holds a read slot: preparing takes a connection.
func (s *Store) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.prepared[query]; ok {
		return st, nil
	}
	st, err := s.read.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	s.prepared[query] = st
	return st, nil
}

// query runs a read query through its prepared statement; ctx bounds the
// wait for a connection and the query itself.
func (s *Store) query(ctx context.Context, query string, args ...any) (*readRows, error) {
	return s.run(ctx, ctx, query, args)
}

// queryPage runs a keyset page query of at most limit rows, the last of
// args. ctx bounds the wait for a connection; when limit is at most
// cdnapi.MaxLimit, the query itself then runs without watching ctx (see
// above).
func (s *Store) queryPage(ctx context.Context, limit int, query string, args ...any) (*readRows, error) {
	run := ctx
	if limit <= cdnapi.MaxLimit {
		run = context.WithoutCancel(ctx)
	}
	return s.run(ctx, run, query, args)
}

// run takes a read slot within ctx, then runs query with runCtx.
func (s *Store) run(ctx, runCtx context.Context, query string, args []any) (*readRows, error) {
	if err := s.acquire(ctx); err != nil {
		return nil, err
	}
	st, err := s.stmt(ctx, query)
	if err == nil {
		var rows *sql.Rows
		if rows, err = st.QueryContext(runCtx, args...); err == nil {
			return &readRows{Rows: rows, slot: s.slots}, nil
		}
	}
	<-s.slots
	return nil, err
}

// queryRow runs a read query that returns at most one row and scans it
// into dest. It returns sql.ErrNoRows when there is no row.
func (s *Store) queryRow(ctx context.Context, query string, args []any, dest ...any) error {
	if err := s.acquire(ctx); err != nil {
		return err
	}
	defer func() { <-s.slots }()
	st, err := s.stmt(ctx, query)
	if err != nil {
		return err
	}
	return st.QueryRowContext(ctx, args...).Scan(dest...)
}
