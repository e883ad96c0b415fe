package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/jackc/pgx/v5"
)

// errWriterDone is what a txWriter's methods return once its Write has
// ended: the transaction they would write in is gone.
var errWriterDone = errors.New("postgres: the Writer of a Write was used after fn returned")

// Write runs fn in one transaction on the primary. Everything fn writes
// through w is committed together when fn returns nil. When fn returns an
// error, panics, or ctx ends, the transaction rolls back and Write returns
// fn's error (unwrapped) or ctx's; a process that dies midway leaves an
// open transaction that the server aborts when the connection drops.
//
// Unlike SQLite, PostgreSQL lets other writers run meanwhile; they wait
// only for rows fn has written, until the commit. fn should write only
// through w all the same: a write through the Store to a row fn has written
// would wait for fn's transaction, which waits for fn.
//
// w may be used from any goroutine until fn returns, and never after.
func (s *Store) Write(ctx context.Context, fn func(w cdnapi.Writer) error) error {
	tx, err := s.primary.Begin(ctx)
	if err != nil {
		return fmt.Errorf("postgres: write: begin: %w", err)
	}
	w := &txWriter{tx: tx, staged: make(map[string]bool), conflicted: make(map[string]bool),
		directLeft: maxDirectCopies}
	defer func() {
		w.end()
		// A no-op after the commit; after an error or a panic in fn it
		// undoes everything fn wrote.
		tx.Rollback(ctx)
	}()
	if err := fn(w); err != nil {
		return err
	}
	w.end() // waits for a write still running on another goroutine
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("postgres: write: commit: %w", err)
	}
	return nil
}

// txWriter is the cdnapi.Writer that Write hands to fn: it upserts in
// Write's transaction. Its methods take turns on mu, since a connection
// runs one statement at a time.
type txWriter struct {
	mu     sync.Mutex
	tx     pgx.Tx
	done   bool            // set when Write ends; nothing more may run
	staged map[string]bool // the staging tables created in tx
	// directLeft is how many more savepoints copyDirect may open in tx.
	directLeft int
	// conflicted holds the tables where a batch of tx met a key that was
	// already there.
	conflicted map[string]bool
}

// end marks w done once no write is running.
func (w *txWriter) end() {
	w.mu.Lock()
	w.done = true
	w.mu.Unlock()
}

// upsert writes the last of each key among n rows with u, under w's lock.
func (w *txWriter) upsert(ctx context.Context, u *upsert, n int, key func(i int) string, row func(i int) []any) error {
	if n == 0 {
		return nil
	}
	keep := lastByKey(n, key)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return errWriterDone
	}
	return u.exec(ctx, w, len(keep), func(i int) []any { return row(keep[i]) })
}

// PutFiles upserts files by ID in the transaction of Write.
func (w *txWriter) PutFiles(ctx context.Context, files []cdnapi.File) error {
	err := w.upsert(ctx, &fileUpsert, len(files),
		func(i int) string { return files[i].ID },
		func(i int) []any {
			f := &files[i]
			return []any{f.ID, f.Project, wholeSecondUTC(f.CreatedAt), f.Filename, f.Bytes, f.Checksum}
		})
	if err != nil {
		return fmt.Errorf("postgres: put %d files: %w", len(files), err)
	}
	return nil
}

// PutAssets upserts assets by ID in the transaction of Write.
func (w *txWriter) PutAssets(ctx context.Context, assets []cdnapi.Asset) error {
	err := w.upsert(ctx, &assetUpsert, len(assets),
		func(i int) string { return assets[i].ID },
		func(i int) []any {
			a := &assets[i]
			return []any{a.ID, wholeSecondUTC(a.CreatedAt), a.Path, a.Bytes, string(a.CacheStatus), a.Region}
		})
	if err != nil {
		return fmt.Errorf("postgres: put %d assets: %w", len(assets), err)
	}
	return nil
}

// PutRegions upserts regions by code in the transaction of Write.
func (w *txWriter) PutRegions(ctx context.Context, regions []cdnapi.Region) error {
	err := w.upsert(ctx, &regionUpsert, len(regions),
		func(i int) string { return regions[i].Code },
		func(i int) []any {
			r := &regions[i]
			return []any{r.Code, r.Name, r.Zone, r.Country, string(r.Status)}
		})
	if err != nil {
		return fmt.Errorf("postgres: put %d regions: %w", len(regions), err)
	}
	return nil
}

// deleteAssetsBefore deletes the oldest assets created before $1, up to $2
// of them. The subquery walks assets_by_created backwards from its old end
// and hands the rows' physical addresses (ctid) to a TID scan, so a batch
// costs its own rows. The repeated created_at test guards against an
// upsert that renewed a row after the subquery saw it: the DELETE re-checks
// its conditions on the newest version of the row.
const deleteAssetsBefore = `DELETE FROM assets
	WHERE ctid = ANY (ARRAY(
		SELECT ctid FROM assets WHERE created_at < $1
		ORDER BY created_at, id LIMIT $2))
	AND created_at < $1`

// DeleteAssetsBefore deletes up to limit assets created before cutoff,
// oldest first, in one statement (one transaction) on the primary, and
// returns how many it deleted. An asset created at cutoff stays. limit must
// be at least 1.
func (s *Store) DeleteAssetsBefore(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	if limit < 1 {
		return 0, fmt.Errorf("postgres: delete assets: limit %d is below 1", limit)
	}
	tag, err := s.primary.Exec(ctx, deleteAssetsBefore, secondBefore(cutoff), limit)
	if err != nil {
		return 0, fmt.Errorf("postgres: delete assets before %s: %w", cutoff.UTC().Format(time.RFC3339Nano), err)
	}
	return int(tag.RowsAffected()), nil
}

// secondBefore returns the whole second s such that a stored time (whole
// seconds) is before t exactly when it is before s: t itself when t is a
// whole second, else the next whole second. It keeps the engines in step
// with SQLite, and with times finer than the microseconds PostgreSQL keeps.
func secondBefore(t time.Time) time.Time {
	s := t.Unix()
	if t.Nanosecond() > 0 {
		s++
	}
	return time.Unix(s, 0).UTC()
}

// SetRegionStatus sets the status of the region with code on the primary,
// until until when that is not zero. It returns cdnapi.ErrNotFound when
// there is no such region. The caller checks status; the schema refuses one
// that is not valid all the same.
func (s *Store) SetRegionStatus(ctx context.Context, code string, status cdnapi.Status, until time.Time) error {
	var end *time.Time // NULL: no end
	var set *string
	if !until.IsZero() {
		u, st := wholeSecondUTC(until), string(status)
		end, set = &u, &st
	}
	tag, err := s.primary.Exec(ctx, `UPDATE regions SET status = $1, status_set = $2, status_until = $3 WHERE code = $4`,
		string(status), set, end, code)
	if err != nil {
		return fmt.Errorf("postgres: set region status: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return cdnapi.ErrNotFound
	}
	return nil
}
