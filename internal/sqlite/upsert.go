package sqlite

import (
	"context"
	"database/sql"
	"strings"
)

// upsertChunk is the number of rows one INSERT statement carries. Each
// statement costs a round through database/sql and the driver, so many rows
// per statement make bulk writes several times faster; 6 columns × 256 rows
// stays far below SQLite's limit of 32766 bound parameters.
const upsertChunk = 256

// upsert is a multi-row INSERT … ON CONFLICT DO UPDATE on one table.
type upsert struct {
	table    string
	columns  []string
	conflict string // the key column
}

// statement returns the upsert of rows rows.
func (u upsert) statement(rows int) string {
	var b strings.Builder
	b.WriteString("INSERT INTO ")
	b.WriteString(u.table)
	b.WriteString(" (")
	b.WriteString(strings.Join(u.columns, ", "))
	b.WriteString(") VALUES ")
	tuple := "(" + strings.Repeat("?, ", len(u.columns)-1) + "?)"
	for i := range rows {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(tuple)
	}
	b.WriteString(" ON CONFLICT (")
	b.WriteString(u.conflict)
	b.WriteString(") DO UPDATE SET ")
	first := true
	for _, c := range u.columns {
		if c == u.conflict {
			continue
		}
		if !first {
			b.WriteString(", ")
		}
		first = false
		b.WriteString(c + " = excluded." + c)
	}
	return b.String()
}

// exec upserts n rows in tx. appendRow appends the values of row i, in the
// order of u.columns, to args and returns it. A later row replaces an
// earlier one with the same key, also within one call.
func (u upsert) exec(ctx context.Context, tx *sql.Tx, n int, appendRow func(args []any, i int) []any) error {
	var full *sql.Stmt // prepared once for every whole chunk
	defer func() {
		if full != nil {
			full.Close()
		}
	}()
	args := make([]any, 0, min(n, upsertChunk)*len(u.columns))
	for start := 0; start < n; start += upsertChunk {
		end := min(start+upsertChunk, n)
		args = args[:0]
		for i := start; i < end; i++ {
			args = appendRow(args, i)
		}
		if end-start < upsertChunk {
			if _, err := tx.ExecContext(ctx, u.statement(end-start), args...); err != nil {
				return err
			}
			continue
		}
		if full == nil {
			var err error
			if full, err = tx.PrepareContext(ctx, u.statement(upsertChunk)); err != nil {
				return err
			}
		}
		if _, err := full.ExecContext(ctx, args...); err != nil {
			return err
		}
	}
	return nil
}
