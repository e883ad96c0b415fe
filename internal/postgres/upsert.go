package postgres

import (
	"fmt"
	"strings"
)

// upsert spells the statements that write one table: INSERT … ON CONFLICT
// DO UPDATE from unnest arrays or from a staging table, and what the COPY
// paths need around them. It only builds SQL; the batcher runs it.
type upsert struct {
	table string
	key   string // the column that identifies a row
	// conflict is the unique key ON CONFLICT names: key, unless the
	// table's unique keys must hold its partition key too (assets).
	conflict string
	columns  []string // key first
	types    []string // the SQL types of columns, for unnest's arrays
}

var (
	fileUpsert = upsert{
		table:   "files",
		key:     "id",
		columns: []string{"id", "project", "created_at", "filename", "bytes", "checksum"},
		types:   []string{"text", "text", "timestamptz", "text", "bigint", "text"},
	}
	assetUpsert = upsert{
		table:    "assets",
		key:      "id",
		conflict: "id, created_at",
		columns:  []string{"id", "created_at", "path", "bytes", "cache_status", "region"},
		types:    []string{"text", "timestamptz", "text", "bigint", "text", "text"},
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
func (u *upsert) onConflict() string {
	var set, old, new []string
	for _, c := range u.columns[1:] {
		set = append(set, c+" = excluded."+c)
		old = append(old, u.table+"."+c)
		new = append(new, "excluded."+c)
	}
	conflict := u.conflict
	if conflict == "" {
		conflict = u.key
	}
	return fmt.Sprintf(" ON CONFLICT (%s) DO UPDATE SET %s WHERE (%s) IS DISTINCT FROM (%s)",
		conflict, strings.Join(set, ", "), strings.Join(old, ", "), strings.Join(new, ", "))
}

// unnestStatement upserts the rows given as one array parameter per column.
func (u *upsert) unnestStatement() string {
	params := make([]string, len(u.columns))
	for i, t := range u.types {
		params[i] = fmt.Sprintf("$%d::%s[]", i+1, t)
	}
	return "INSERT INTO " + u.table + " (" + strings.Join(u.columns, ", ") + ") SELECT * FROM unnest(" +
		strings.Join(params, ", ") + ")" + u.onConflict()
}

// anyKeyTaken asks whether any of the keys given as $1, a text array, is in
// the table already.
func (u *upsert) anyKeyTaken() string {
	return "SELECT EXISTS (SELECT 1 FROM " + u.table + " WHERE " + u.key + " = ANY ($1::text[]))"
}

// staging is the temporary table a COPY fills; it lives until the commit.
func (u *upsert) staging() string { return u.table + "_staging" }

// createStaging creates the staging table. LIKE copies the columns' types
// and collations, not the indexes: the staging table only has to be read
// once, in full.
func (u *upsert) createStaging() string {
	return "CREATE TEMP TABLE " + u.staging() + " (LIKE " + u.table + ") ON COMMIT DROP"
}

// truncateStaging empties the staging table for the next batch.
func (u *upsert) truncateStaging() string { return "TRUNCATE " + u.staging() }

// fromStaging upserts the rows of the staging table in one statement.
func (u *upsert) fromStaging() string {
	cols := strings.Join(u.columns, ", ")
	return "INSERT INTO " + u.table + " (" + cols + ") SELECT " + cols + " FROM " + u.staging() + u.onConflict()
}
