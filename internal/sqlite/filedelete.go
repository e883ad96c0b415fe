package sqlite

import (
	"context"
	"database/sql"
	"strings"

	"github.com/cdnapi/cdnapi"
)

// deleteChunk is the number of IDs one DELETE carries: far below SQLite's
// limit of 32,766 bound parameters, and large enough that a sync removing a
// whole tree costs a few statements per thousand files.
const deleteChunk = 1024

// DeleteFiles deletes the files of project with the given IDs. Each
// statement looks every ID up through the primary key; the project check
// keeps a caller from deleting another project's file by its ID.
func (b *batcher) DeleteFiles(ctx context.Context, project string, ids []string) error {
	for start := 0; start < len(ids); start += deleteChunk {
		end := min(start+deleteChunk, len(ids))
		args := append(b.args[:0], project)
		for _, id := range ids[start:end] {
			args = append(args, id)
		}
		b.args = args
		st, err := b.deleteStmt(ctx, end-start)
		if err != nil {
			return err
		}
		_, err = st.ExecContext(ctx, args...)
		clear(args)
		if err != nil {
			return err
		}
	}
	return nil
}

// deleteKey is the name of the prepared deletes in the batcher's statement
// cache, beside the upserts: no table has it.
const deleteKey = "files: delete"

// deleteStmt returns the DELETE of n IDs of one project, prepared in b's
// transaction on first use.
func (b *batcher) deleteStmt(ctx context.Context, n int) (*sql.Stmt, error) {
	k := stmtKey{deleteKey, n}
	if st, ok := b.prepared[k]; ok {
		return st, nil
	}
	st, err := b.tx.PrepareContext(ctx,
		"DELETE FROM files WHERE project = ? AND id IN ("+strings.TrimSuffix(strings.Repeat("?, ", n), ", ")+")")
	if err != nil {
		return nil, err
	}
	b.prepared[k] = st
	return st, nil
}

var _ cdnapi.Writer = (*batcher)(nil)
