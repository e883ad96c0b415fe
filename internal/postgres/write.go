package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/txwriter"
	"github.com/jackc/pgx/v5"
)

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
// w may be used from any goroutine until fn returns, and never after (see
// txwriter.Run).
func (s *Store) Write(ctx context.Context, fn func(w cdnapi.Writer) error) error {
	return s.batch(ctx, func(b *batcher) error { return txwriter.Run("postgres", b, fn) })
}

// batch runs fn with a batcher on one transaction of the primary, and
// commits it when fn returns nil. When fn returns an error or panics, the
// transaction rolls back and batch returns fn's error as it is.
func (s *Store) batch(ctx context.Context, fn func(b *batcher) error) error {
	tx, err := s.primary.Begin(ctx)
	if err != nil {
		return fmt.Errorf("postgres: write: begin: %w", err)
	}
	// A no-op after the commit; after an error or a panic in fn it undoes
	// everything fn wrote.
	defer tx.Rollback(ctx)
	if err := fn(newBatcher(tx)); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("postgres: write: commit: %w", err)
	}
	return nil
}

// copyThreshold is the batch size from which an upsert goes through COPY
// (see copyExec). Below it, one INSERT … SELECT FROM unnest(arrays) carries
// the rows in a single round trip and costs no catalog work; above it,
// COPY's streaming wins. BenchmarkPutFiles on a busy 2-core box: at 500
// rows unnest took 4–6 ms and COPY 10–12; at 5,000 rows COPY took 28–47 ms
// and unnest 37–74; at 50,000 they were level.
const copyThreshold = 2_000

// unnestChunk caps the rows of one unnest statement, so that one message
// stays a few megabytes.
const unnestChunk = 10_000

// batcher writes the records of one Write in its transaction: it owns the
// transaction, chooses how each batch travels (unnest arrays, a direct
// COPY, or COPY into a staging table) and keeps what the transaction has
// learnt on the way; the upserts only spell the SQL. txwriter.Run calls it
// one batch at a time, so it needs no lock.
type batcher struct {
	tx     pgx.Tx
	staged map[string]bool // the staging tables created in tx
	// directLeft is how many more savepoints copyDirect may open in tx.
	directLeft int
	// conflicted holds the tables where a batch of tx met a key that was
	// already there.
	conflicted map[string]bool
}

func newBatcher(tx pgx.Tx) *batcher {
	return &batcher{tx: tx, staged: make(map[string]bool), conflicted: make(map[string]bool),
		directLeft: maxDirectCopies}
}

// PutFiles upserts files by ID.
func (b *batcher) PutFiles(ctx context.Context, files []cdnapi.File) error {
	return b.upsert(ctx, &fileUpsert, len(files),
		func(i int) string { return files[i].ID },
		func(i int) []any {
			f := &files[i]
			return []any{f.ID, f.Project, wholeSecondUTC(f.CreatedAt), f.Filename, f.Bytes, f.Checksum}
		})
}

// PutAssets upserts assets by ID. The table's unique key is (id,
// created_at), as its partitioning requires, so an ID written again at
// another time would make a second row: the rows of these IDs at other
// times are deleted first. That costs a probe of each partition's primary
// key per asset, and finds nothing for new assets.
func (b *batcher) PutAssets(ctx context.Context, assets []cdnapi.Asset) error {
	keep := lastByKey(len(assets), func(i int) string { return assets[i].ID })
	for start := 0; start < len(keep); start += unnestChunk {
		part := keep[start:min(start+unnestChunk, len(keep))]
		ids, times := make([]string, len(part)), make([]time.Time, len(part))
		for i, k := range part {
			ids[i], times[i] = assets[k].ID, wholeSecondUTC(assets[k].CreatedAt)
		}
		if _, err := b.tx.Exec(ctx, deleteAssetsElsewhen, ids, times); err != nil {
			return err
		}
	}
	return b.upsert(ctx, &assetUpsert, len(assets),
		func(i int) string { return assets[i].ID },
		func(i int) []any {
			a := &assets[i]
			return []any{a.ID, wholeSecondUTC(a.CreatedAt), a.Path, a.Bytes, string(a.CacheStatus), a.Region}
		})
}

// PutRegions upserts regions by code.
func (b *batcher) PutRegions(ctx context.Context, regions []cdnapi.Region) error {
	return b.upsert(ctx, &regionUpsert, len(regions),
		func(i int) string { return regions[i].Code },
		func(i int) []any {
			r := &regions[i]
			return []any{r.Code, r.Name, r.Zone, r.Country, string(r.Status)}
		})
}

// upsert writes, with u, the last of each key among n rows: PostgreSQL
// refuses to update one row twice in a statement. key returns the key of
// row i, and row its values in the order of u.columns.
func (b *batcher) upsert(ctx context.Context, u *upsert, n int, key func(i int) string, row func(i int) []any) error {
	keep := lastByKey(n, key)
	kept := func(i int) []any { return row(keep[i]) }
	if len(keep) >= copyThreshold {
		return b.copyExec(ctx, u, len(keep), kept)
	}
	return b.unnestExec(ctx, u, len(keep), kept)
}

// lastByKey returns the indexes of the items to write: for each key, the
// last item that has it, as a replacing write of each in turn would leave.
// The order of the kept items is kept.
func lastByKey(n int, key func(i int) string) []int {
	last := make(map[string]int, n)
	for i := range n {
		last[key(i)] = i
	}
	keep := make([]int, 0, len(last))
	for i := range n {
		if last[key(i)] == i {
			keep = append(keep, i)
		}
	}
	return keep
}

// unnestExec upserts n rows (distinct keys) with INSERT … SELECT FROM
// unnest(arrays), one statement per unnestChunk rows.
func (b *batcher) unnestExec(ctx context.Context, u *upsert, n int, row func(i int) []any) error {
	stmt := u.unnestStatement()
	rows := make([][]any, 0, min(n, unnestChunk))
	for start := 0; start < n; start += unnestChunk {
		rows = rows[:0]
		for i := start; i < min(start+unnestChunk, n); i++ {
			rows = append(rows, row(i))
		}
		args := make([]any, len(u.columns))
		for c, typ := range u.types {
			args[c] = column(typ, rows, c)
		}
		if _, err := b.tx.Exec(ctx, stmt, args...); err != nil {
			return err
		}
	}
	return nil
}

// column returns column c of rows as a slice of the Go type that pgx encodes
// as an array of typ.
func column(typ string, rows [][]any, c int) any {
	switch typ {
	case "timestamptz":
		return columnOf[time.Time](rows, c)
	case "bigint":
		return columnOf[int64](rows, c)
	default:
		return columnOf[string](rows, c)
	}
}

func columnOf[T any](rows [][]any, c int) []T {
	col := make([]T, len(rows))
	for i, r := range rows {
		col[i] = r[c].(T)
	}
	return col
}

// deleteAssetsElsewhen deletes the rows of the IDs in $1 whose time is
// not the one beside it in $2.
const deleteAssetsElsewhen = `DELETE FROM assets a
	USING unnest($1::text[], $2::timestamptz[]) AS w(id, created_at)
	WHERE a.id = w.id AND a.created_at <> w.created_at`

// deleteAssetsBefore deletes the oldest assets created before $1, up to $2
// of them, with the function of migration 00011: it picks them in the
// list's order over every partition and deletes each partition's share by
// physical address (a ctid names a row only within one partition). One
// statement joining the table to its oldest rows would let the planner hash
// the join, reading every partition whole (TestDeleteAssetsBeforePlan).
const deleteAssetsBefore = `SELECT assets_delete_before($1, $2)`

// DeleteAssetsBefore deletes up to limit assets created before cutoff,
// oldest first, in one statement (one transaction) on the primary, and
// returns how many it deleted. An asset created at cutoff stays. limit must
// be at least 1.
func (s *Store) DeleteAssetsBefore(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	if limit < 1 {
		return 0, fmt.Errorf("postgres: delete assets: limit %d is below 1", limit)
	}
	var n int64
	if err := s.primary.QueryRow(ctx, deleteAssetsBefore, secondBefore(cutoff), limit).Scan(&n); err != nil {
		return 0, fmt.Errorf("postgres: delete assets before %s: %w", cutoff.UTC().Format(time.RFC3339Nano), err)
	}
	return int(n), nil
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
