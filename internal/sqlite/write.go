package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/bits"
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
// txwriter.Run). Each upsert statement is prepared once on the writer
// connection and kept for the Writes that follow, however many batches fn
// writes.
func (s *Store) Write(ctx context.Context, fn func(w cdnapi.Writer) error) error {
	var fnErr error
	var unkept []upsertSize
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		b := s.newBatcher(tx)
		fnErr = txwriter.Run("sqlite", b, fn)
		unkept = b.unkept
		return fnErr
	})
	if err == nil && len(unkept) > 0 {
		s.keepUpserts(ctx, unkept)
	}
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
// says who it is to the processes that wait (see advertise). A WAL over
// its limit is checkpointed before the transaction begins and after it
// commits (see checkpoint.go).
func (s *Store) inTx(ctx context.Context, fn func(tx *sql.Tx) error) (err error) {
	s.checkpoints.beforeWrite(ctx)
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
	s.checkpoints.check(ctx)
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
	s        *Store
	tx       *sql.Tx
	prepared map[stmtKey]*sql.Stmt // closed by database/sql when tx ends
	args     []any                 // the bound values of one statement, reused
	unkept   []upsertSize          // prepared in tx, not kept by the Store yet
}

// stmtKey names a prepared upsert: the table and the number of rows.
type stmtKey struct {
	table string
	rows  int
}

func (s *Store) newBatcher(tx *sql.Tx) *batcher {
	return &batcher{s: s, tx: tx, prepared: make(map[stmtKey]*sql.Stmt)}
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
	for start := 0; start < n; {
		end := start + chunkRows(n-start)
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
		start = end
	}
	return nil
}

// chunkRows is how many of n rows the next statement writes: upsertChunk,
// or for fewer, the largest power of two that fits. So the statements of
// any batch have one of 11 sizes, which the Store prepares once each
// (see stmt), however many transactions write batches of varied sizes, as
// a follower's do; 1,023 rows take 10 statements.
func chunkRows(n int) int {
	if n >= upsertChunk {
		return upsertChunk
	}
	return 1 << (bits.Len(uint(n)) - 1)
}

// stmt returns the upsert of rows rows with u, in b's transaction. A
// follower commits several times a second, and preparing an upsert of
// 1,024 rows costs about as much as running it (15% of a follower's commit
// time when each transaction prepared its own), so the Store keeps each
// upsert prepared on its writer connection once a transaction has used
// it (see keepUpserts), and later transactions use that one.
func (b *batcher) stmt(ctx context.Context, u *upsert, rows int) (*sql.Stmt, error) {
	k := stmtKey{u.table, rows}
	if st, ok := b.prepared[k]; ok {
		return st, nil
	}
	b.s.mu.Lock()
	parent := b.s.upserts[k]
	b.s.mu.Unlock()
	var st *sql.Stmt
	if parent != nil {
		// The writer pool has one connection, the transaction's, on which
		// parent is prepared already: StmtContext uses that statement.
		st = b.tx.StmtContext(ctx, parent)
	} else {
		var err error
		if st, err = b.tx.PrepareContext(ctx, u.statement(rows)); err != nil {
			return nil, err
		}
		b.unkept = append(b.unkept, upsertSize{u, rows})
	}
	b.prepared[k] = st
	return st, nil
}

// upsertSize is an upsert of a number of rows.
type upsertSize struct {
	u    *upsert
	rows int
}

// keepUpserts prepares the upserts on the writer pool, outside any
// transaction (the pool's one connection is busy during one), for the
// transactions to come. A failure only leaves them to be prepared again.
func (s *Store) keepUpserts(ctx context.Context, sizes []upsertSize) {
	for _, us := range sizes {
		k := stmtKey{us.u.table, us.rows}
		s.mu.Lock()
		_, ok := s.upserts[k]
		s.mu.Unlock()
		if ok {
			continue
		}
		st, err := s.write.PrepareContext(ctx, us.u.statement(us.rows))
		if err != nil {
			return
		}
		s.mu.Lock()
		if _, ok := s.upserts[k]; ok {
			st.Close()
		} else {
			s.upserts[k] = st
		}
		s.mu.Unlock()
	}
}
