package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/txwriter"
)

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
// w may be used from any goroutine until fn returns, and never after (see
// txwriter.Run). Within the transaction each upsert statement is prepared
// once, however many batches fn writes.
func (s *Store) Write(ctx context.Context, fn func(w cdnapi.Writer) error) error {
	var fnErr error
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		fnErr = txwriter.Run("sqlite", newBatcher(tx), fn)
		return fnErr
	})
	if err != nil && fnErr == nil {
		return fmt.Errorf("sqlite: write: %w", err)
	}
	return err
}

// inTx runs fn in one transaction on the writer connection, and commits it
// when fn returns nil. When fn returns an error or panics, or ctx ends, the
// transaction rolls back, and inTx returns fn's error as it is, or ctx's.
// Every transaction of the Store begins here, except the migrations', which
// goose runs. A write lock that another process holds is waited for as
// long as ctx allows (see waitWrite); a transaction that holds it long
// says who it is to the processes that wait (see advertise).
func (s *Store) inTx(ctx context.Context, fn func(tx *sql.Tx) error) (err error) {
	var tx *sql.Tx
	err = s.waitWrite(ctx, func() error {
		var err error
		tx, err = s.write.BeginTx(ctx, nil)
		return err
	})
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer s.advertise(time.Now())()
	defer func() {
		// After a commit this is a no-op; after an error or a panic in fn
		// it undoes everything fn wrote. (A cancelled ctx has rolled back
		// already; then Rollback reports only that.)
		if rbErr := tx.Rollback(); rbErr != nil && !errors.Is(rbErr, sql.ErrTxDone) && err != nil {
			err = errors.Join(err, fmt.Errorf("roll back: %w", rbErr))
		}
	}()
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// upsertChunk is the number of rows one INSERT statement carries. Each
// statement costs a round through database/sql and the driver, so many rows
// per statement make bulk writes several times faster (one row per
// statement wrote 140,000 assets/s where 256 wrote 210,000), and 1,024
// rows a few percent faster again than 256; 6 columns × 1,024 rows stays
// far below SQLite's limit of 32,766 bound parameters.
const upsertChunk = 1024

// batcher writes the records of one Write in its transaction: it owns the
// transaction, cuts batches into statements of upsertChunk rows and keeps
// their prepared statements; the upserts only spell the SQL. txwriter.Run
// calls it one batch at a time, so it needs no lock.
type batcher struct {
	tx       *sql.Tx
	prepared map[stmtKey]*sql.Stmt // closed by database/sql when tx ends
	args     []any                 // the bound values of one statement, reused
}

// stmtKey names a prepared upsert: the table and the number of rows.
type stmtKey struct {
	table string
	rows  int
}

func newBatcher(tx *sql.Tx) *batcher {
	return &batcher{tx: tx, prepared: make(map[stmtKey]*sql.Stmt)}
}

// PutFiles upserts files by ID.
func (b *batcher) PutFiles(ctx context.Context, files []cdnapi.File) error {
	return b.upsert(ctx, &fileUpsert, len(files), func(args []any, i int) []any {
		f := &files[i]
		return append(args, f.ID, f.Project, f.CreatedAt.Unix(), f.Filename, f.Bytes, f.Checksum)
	})
}

// PutAssets upserts assets by ID.
func (b *batcher) PutAssets(ctx context.Context, assets []cdnapi.Asset) error {
	return b.upsert(ctx, &assetUpsert, len(assets), func(args []any, i int) []any {
		a := &assets[i]
		return append(args, a.ID, a.CreatedAt.Unix(), a.Path, a.Bytes, string(a.CacheStatus), a.Region)
	})
}

// PutRegions upserts regions by code.
func (b *batcher) PutRegions(ctx context.Context, regions []cdnapi.Region) error {
	return b.upsert(ctx, &regionUpsert, len(regions), func(args []any, i int) []any {
		r := &regions[i]
		return append(args, r.Code, r.Name, r.Zone, r.Country, string(r.Status))
	})
}

// upsert writes n rows with u, upsertChunk rows per statement. appendRow
// appends the values of row i, in the order of u.columns, to args and
// returns it. A later row replaces an earlier one with the same key, also
// within one call.
func (b *batcher) upsert(ctx context.Context, u *upsert, n int, appendRow func(args []any, i int) []any) error {
	for start := 0; start < n; start += upsertChunk {
		end := min(start+upsertChunk, n)
		args := b.args[:0]
		for i := start; i < end; i++ {
			args = appendRow(args, i)
		}
		b.args = args
		st, err := b.stmt(ctx, u, end-start)
		if err != nil {
			return err
		}
		_, err = st.ExecContext(ctx, args...)
		clear(args) // let the batch's strings go
		if err != nil {
			return err
		}
	}
	return nil
}

// stmt returns the upsert of rows rows with u, prepared in b's transaction
// on first use. A batch of any size needs at most two: the one of
// upsertChunk rows, and one for the rest.
func (b *batcher) stmt(ctx context.Context, u *upsert, rows int) (*sql.Stmt, error) {
	k := stmtKey{u.table, rows}
	if st, ok := b.prepared[k]; ok {
		return st, nil
	}
	st, err := b.tx.PrepareContext(ctx, u.statement(rows))
	if err != nil {
		return nil, err
	}
	b.prepared[k] = st
	return st, nil
}
