package sqlite

import "strings"

// upsert is a multi-row INSERT … ON CONFLICT DO UPDATE on one table.
type upsert struct {
	table    string
	columns  []string
	conflict string // the key column
}

// The upserts of the three record tables. Every write of a record, inside
// Write, goes through one of these. They only spell the SQL; the batcher
// runs it.
var (
	fileUpsert = upsert{
		table:    "files",
		columns:  []string{"id", "project", "created_at", "filename", "bytes", "checksum"},
		conflict: "id",
	}
	assetUpsert = upsert{
		table:    "assets",
		columns:  []string{"id", "created_at", "path", "bytes", "cache_status", "region"},
		conflict: "id",
	}
	regionUpsert = upsert{
		table:    "regions",
		columns:  []string{"code", "name", "zone", "country", "status"},
		conflict: "code",
	}
)

// statement returns the upsert of rows rows. It replaces every column of
// a row whose key exists, but skips rows that would not change: running an
// ingest again, as after a crash, then only reads what is already there
// instead of rewriting every row and index entry (writing the same
// 500,000 random-ID assets again took 2.9 s with the test, 4.2–5.3 s
// without).
func (u *upsert) statement(rows int) string {
	var set, old, new []string
	for _, c := range u.columns {
		if c != u.conflict {
			set = append(set, c+" = excluded."+c)
			old = append(old, u.table+"."+c)
			new = append(new, "excluded."+c)
		}
	}
	var b strings.Builder
	b.WriteString("INSERT INTO " + u.table + " (" + strings.Join(u.columns, ", ") + ") VALUES ")
	tuple := "(" + strings.Repeat("?, ", len(u.columns)-1) + "?)"
	for i := range rows {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(tuple)
	}
	b.WriteString(" ON CONFLICT (" + u.conflict + ") DO UPDATE SET " + strings.Join(set, ", "))
	b.WriteString(" WHERE (" + strings.Join(old, ", ") + ") IS NOT (" + strings.Join(new, ", ") + ")")
	return b.String()
}
