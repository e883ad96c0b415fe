package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// copyThreshold is the batch size from which an upsert goes through COPY
// into a temporary table. Below it, one INSERT … SELECT FROM unnest(arrays)
// carries the rows in a single round trip and costs no catalog work; above
// it, COPY's streaming wins. BenchmarkPutFiles on a busy 2-core box: at 500
// rows unnest took 4–6 ms and COPY 10–12; at 5,000 rows COPY took 28–47 ms
// and unnest 37–74; at 50,000 they were level.
const copyThreshold = 2_000

// unnestChunk caps the rows of one unnest statement, so that one message
// stays a few megabytes.
const unnestChunk = 10_000

// upsert is an INSERT … ON CONFLICT DO UPDATE of one table.
type upsert struct {
	table   string
	key     string   // the conflict column
	columns []string // key first
	types   []string // the SQL types of columns, for unnest's arrays
}

var (
	fileUpsert = upsert{
		table:   "files",
		key:     "id",
		columns: []string{"id", "project", "created_at", "filename", "bytes", "checksum"},
		types:   []string{"text", "text", "timestamptz", "text", "bigint", "text"},
	}
	assetUpsert = upsert{
		table:   "assets",
		key:     "id",
		columns: []string{"id", "created_at", "path", "bytes", "cache_status", "region"},
		types:   []string{"text", "timestamptz", "text", "bigint", "text", "text"},
	}
	regionUpsert = upsert{
		table:   "regions",
		key:     "code",
		columns: []string{"code", "name", "zone", "country", "status"},
		types:   []string{"text", "text", "text", "text", "text"},
	}
)

// onConflict is the tail of the upserts: replace every column, but skip rows
// that would not change, so that writing the same data again (a re-run seed
// or ingest) leaves no dead row versions behind.
func (u upsert) onConflict() string {
	var set, old, new []string
	for _, c := range u.columns[1:] {
		set = append(set, c+" = excluded."+c)
		old = append(old, u.table+"."+c)
		new = append(new, "excluded."+c)
	}
	return fmt.Sprintf(" ON CONFLICT (%s) DO UPDATE SET %s WHERE (%s) IS DISTINCT FROM (%s)",
		u.key, strings.Join(set, ", "), strings.Join(old, ", "), strings.Join(new, ", "))
}

// unnestStatement upserts the rows given as one array parameter per column.
func (u upsert) unnestStatement() string {
	params := make([]string, len(u.columns))
	for i, t := range u.types {
		params[i] = fmt.Sprintf("$%d::%s[]", i+1, t)
	}
	return "INSERT INTO " + u.table + " (" + strings.Join(u.columns, ", ") + ") SELECT * FROM unnest(" +
		strings.Join(params, ", ") + ")" + u.onConflict()
}

// staging is the temporary table a COPY fills; it lives until the commit.
func (u upsert) staging() string { return u.table + "_staging" }

// exec upserts n rows in w's transaction. row returns the values of row i in
// the order of u.columns. The rows must have distinct keys: PostgreSQL
// refuses to update one row twice in a statement. The caller holds w.mu.
func (u upsert) exec(ctx context.Context, w *txWriter, n int, row func(i int) []any) error {
	if n >= copyThreshold {
		return u.copyExec(ctx, w, n, row)
	}
	return u.unnestExec(ctx, w.tx, n, row)
}

// unnestExec upserts the rows with INSERT … SELECT FROM unnest(arrays), one
// statement per unnestChunk rows.
func (u upsert) unnestExec(ctx context.Context, tx pgx.Tx, n int, row func(i int) []any) error {
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
		if _, err := tx.Exec(ctx, stmt, args...); err != nil {
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

// uniqueViolation is PostgreSQL's SQLSTATE for a duplicate key.
const uniqueViolation = "23505"

// maxDirectCopies caps the batches of one Write that copyExec COPYs
// straight into their table. Each runs in a savepoint, and each savepoint
// that wrote keeps a subtransaction ID until the commit; past 64 of them
// (PGPROC_MAX_CACHED_SUBXIDS) the transaction "overflows", and every other
// session's snapshot, on the primary and on hot standbys, must then look
// its subtransactions up in pg_subtrans until it commits. Later batches
// take the upsert path, which needs no savepoint.
const maxDirectCopies = 60

// copyExec upserts n rows (distinct keys) with COPY. When none of their
// keys is in the table yet, as when loading new edge logs, it COPYs them
// straight in, in a savepoint; when one is, the COPY fails on the unique
// index, the savepoint is rolled back, and the rows are upserted through a
// staging table. That holds under concurrency too: a COPY that meets a key
// another transaction inserted and has not committed waits for it, then
// fails if it commits.
//
// The direct COPY skips the speculative insertion of INSERT … ON CONFLICT,
// which costs the server about a third more per row than a plain insert
// (500k new assets into a million with psql: 3.0 s vs 4.2 s). Through this
// package, 500k new assets with random IDs in batches of 16,000 went from
// 53–73k rows/s to 75–125k.
func (u upsert) copyExec(ctx context.Context, w *txWriter, n int, row func(i int) []any) error {
	rows := make([][]any, n)
	for i := range rows {
		rows[i] = row(i)
	}
	if w.directLeft > 0 {
		done, err := u.copyDirect(ctx, w, rows)
		if done || err != nil {
			return err
		}
	}
	return u.stageAndUpsert(ctx, w, rows)
}

// copyDirect COPYs rows straight into u's table, in a savepoint. It reports
// false, having written nothing, when a key of rows is already there.
//
// It tries the COPY first, unchecked, as long as no batch of w has met a
// key in u's table: new logs rarely repeat a row, and a COPY that fails on
// its first row (the same input again) costs little. Once one has, it asks
// first, since a COPY that failed late would leave a batch of dead rows
// behind. Asking costs an index probe per key (a quarter of the time of
// the insert with random IDs), which the unchecked COPY saves.
func (u upsert) copyDirect(ctx context.Context, w *txWriter, rows [][]any) (bool, error) {
	if w.conflicted[u.table] {
		keys := make([]string, len(rows))
		for i, r := range rows {
			keys[i] = r[0].(string)
		}
		var taken bool
		err := w.tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM "+u.table+" WHERE "+u.key+" = ANY ($1::text[]))", keys).Scan(&taken)
		if err != nil || taken {
			return false, err
		}
	}
	sp, err := w.tx.Begin(ctx) // SAVEPOINT
	if err != nil {
		return false, err
	}
	w.directLeft--
	if _, err := sp.CopyFrom(ctx, pgx.Identifier{u.table}, u.columns, pgx.CopyFromRows(rows)); err != nil {
		if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && pgErr.Code == uniqueViolation {
			w.conflicted[u.table] = true
			return false, sp.Rollback(ctx)
		}
		return false, err
	}
	return true, sp.Commit(ctx) // RELEASE SAVEPOINT
}

// stageAndUpsert streams the rows into a temporary table with COPY and
// upserts them from there in one statement. The table is created at the
// first COPY of a transaction and dropped at its end; a later batch in the
// same transaction empties and reuses it.
func (u upsert) stageAndUpsert(ctx context.Context, w *txWriter, rows [][]any) error {
	staging := u.staging()
	prepare := "TRUNCATE " + staging
	if !w.staged[staging] {
		// LIKE copies the columns' types and collations, not the indexes:
		// the staging table only has to be read once, in full.
		prepare = "CREATE TEMP TABLE " + staging + " (LIKE " + u.table + ") ON COMMIT DROP"
	}
	if _, err := w.tx.Exec(ctx, prepare); err != nil {
		return err
	}
	w.staged[staging] = true
	if _, err := w.tx.CopyFrom(ctx, pgx.Identifier{staging}, u.columns, pgx.CopyFromRows(rows)); err != nil {
		return err
	}
	cols := strings.Join(u.columns, ", ")
	_, err := w.tx.Exec(ctx, "INSERT INTO "+u.table+" ("+cols+") SELECT "+cols+" FROM "+staging+u.onConflict())
	return err
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
