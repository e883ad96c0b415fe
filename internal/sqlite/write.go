package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"

	"github.com/cdnapi/cdnapi"
)

// errWriterDone is what a txWriter's methods return once its Write has
// ended: the transaction they would write in is gone.
var errWriterDone = errors.New("sqlite: the Writer of a Write was used after fn returned")

// Write runs fn in one transaction on the writer connection, begun
// IMMEDIATE so that it holds SQLite's write lock from the start. Everything
// fn writes through w is committed together when fn returns nil. When fn
// returns an error, panics, or ctx ends, the transaction rolls back and
// Write returns fn's error (unwrapped) or ctx's. A process that dies midway
// leaves the database as before: SQLite's journal sees to that.
//
// The store has one writer, so every other write of this process waits
// while fn runs, and other processes' writes wait up to their busy timeout.
// fn must therefore write only through w: a write through the Store itself
// would wait for fn, which waits for it, until ctx ends. Reads through the
// Store are fine; they see the database as it was before Write began.
//
// w may be used from any goroutine until fn returns, and never after.
// Within the transaction each upsert statement is prepared once, however
// many batches fn writes.
func (s *Store) Write(ctx context.Context, fn func(w cdnapi.Writer) error) (err error) {
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: write: begin: %w", err)
	}
	w := &txWriter{tx: tx, prepared: make(map[stmtKey]*sql.Stmt)}
	defer func() {
		w.end()
		// After a commit this is a no-op; after an error or a panic in fn
		// it undoes everything fn wrote. (A cancelled ctx has rolled back
		// already; then Rollback reports only that.)
		if rbErr := tx.Rollback(); rbErr != nil && !errors.Is(rbErr, sql.ErrTxDone) && err != nil {
			err = errors.Join(err, fmt.Errorf("sqlite: write: roll back: %w", rbErr))
		}
	}()
	if err := fn(w); err != nil {
		return err
	}
	w.end() // waits for a write still running on another goroutine
	if err := tx.Commit(); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return fmt.Errorf("sqlite: write: %w", ctxErr)
		}
		return fmt.Errorf("sqlite: write: commit: %w", err)
	}
	return nil
}

// txWriter is the cdnapi.Writer that Write hands to fn: it upserts in
// Write's transaction. Its methods take turns on mu, since a transaction
// runs one statement at a time.
type txWriter struct {
	mu       sync.Mutex
	tx       *sql.Tx
	done     bool                  // set when Write ends; nothing more may run
	prepared map[stmtKey]*sql.Stmt // closed by database/sql when tx ends
	args     []any                 // the bound values of one statement, reused
}

// stmtKey names a prepared upsert: the table and the number of rows.
type stmtKey struct {
	table string
	rows  int
}

// end marks w done once no write is running.
func (w *txWriter) end() {
	w.mu.Lock()
	w.done = true
	w.mu.Unlock()
}

// stmt returns the upsert of rows rows into u's table, prepared in w's
// transaction on first use. A batch of any size needs at most two: the one
// of upsertChunk rows, and one for the rest.
func (w *txWriter) stmt(ctx context.Context, u *upsert, rows int) (*sql.Stmt, error) {
	k := stmtKey{u.table, rows}
	if st, ok := w.prepared[k]; ok {
		return st, nil
	}
	st, err := w.tx.PrepareContext(ctx, u.statement(rows))
	if err != nil {
		return nil, err
	}
	w.prepared[k] = st
	return st, nil
}

// upsert writes n rows with u under w's lock.
func (w *txWriter) upsert(ctx context.Context, u *upsert, n int, appendRow func(args []any, i int) []any) error {
	if n == 0 {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return errWriterDone
	}
	return u.exec(ctx, w, n, appendRow)
}

// PutFiles upserts files by ID in the transaction of Write.
func (w *txWriter) PutFiles(ctx context.Context, files []cdnapi.File) error {
	err := w.upsert(ctx, &fileUpsert, len(files), func(args []any, i int) []any {
		f := &files[i]
		return append(args, f.ID, f.Project, f.CreatedAt.Unix(), f.Filename, f.Bytes, f.Checksum)
	})
	if err != nil {
		return fmt.Errorf("sqlite: put %d files: %w", len(files), err)
	}
	return nil
}

// PutAssets upserts assets by ID in the transaction of Write.
func (w *txWriter) PutAssets(ctx context.Context, assets []cdnapi.Asset) error {
	err := w.upsert(ctx, &assetUpsert, len(assets), func(args []any, i int) []any {
		a := &assets[i]
		return append(args, a.ID, a.CreatedAt.Unix(), a.Path, a.Bytes, string(a.CacheStatus), a.Region)
	})
	if err != nil {
		return fmt.Errorf("sqlite: put %d assets: %w", len(assets), err)
	}
	return nil
}

// PutRegions upserts regions by code in the transaction of Write.
func (w *txWriter) PutRegions(ctx context.Context, regions []cdnapi.Region) error {
	err := w.upsert(ctx, &regionUpsert, len(regions), func(args []any, i int) []any {
		r := &regions[i]
		return append(args, r.Code, r.Name, r.Zone, r.Country, string(r.Status))
	})
	if err != nil {
		return fmt.Errorf("sqlite: put %d regions: %w", len(regions), err)
	}
	return nil
}
