package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
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

// copyExec streams the rows into a temporary table with COPY and upserts
// them from there in one statement. The table is created at the first COPY
// of a transaction and dropped at its end; a later batch in the same
// transaction empties and reuses it.
func (u upsert) copyExec(ctx context.Context, w *txWriter, n int, row func(i int) []any) error {
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
	i := 0
	src := pgx.CopyFromFunc(func() ([]any, error) {
		if i == n {
			return nil, nil
		}
		i++
		return row(i - 1), nil
	})
	if _, err := w.tx.CopyFrom(ctx, pgx.Identifier{staging}, u.columns, src); err != nil {
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
