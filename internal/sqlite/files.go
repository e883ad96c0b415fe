package sqlite

import (
	"context"
	"fmt"

	"github.com/cdnapi/cdnapi"
)

// listPrealloc caps the rows a list makes room for before it reads any: a
// caller's limit may be large, and a page of the API fits well within it.
const listPrealloc = 128

// The file list queries. Both are range scans of the files table itself,
// which is clustered on (project, created_at, id) (see migration 00007), read
// backwards and stopped after LIMIT rows: one seek, then rows side by side,
// so a page deep in the list costs what the first one does. The row-value
// comparison is what SQLite turns into the bound of the scan (see
// TestQueryPlans).
const (
	listFilesFirst = `SELECT id, created_at, filename, bytes, checksum FROM files
		WHERE project = ?
		ORDER BY created_at DESC, id DESC LIMIT ?`
	listFilesAfter = `SELECT id, created_at, filename, bytes, checksum FROM files
		WHERE project = ? AND (created_at, id) < (?, ?)
		ORDER BY created_at DESC, id DESC LIMIT ?`
)

// ListFiles returns up to q.Limit files of q.Project, newest first, after
// q.After when it is set. ctx bounds the wait for a read connection; a page
// of at most cdnapi.MaxLimit files then runs to its end (see read.go).
func (s *Store) ListFiles(ctx context.Context, q cdnapi.FileQuery) ([]cdnapi.File, error) {
	if q.Limit < 1 {
		// SQLite reads LIMIT -1 as "no limit"; refuse rather than scan it all.
		return nil, fmt.Errorf("sqlite: list files: limit %d is below 1", q.Limit)
	}
	var rows *readRows
	var err error
	if q.After == nil {
		rows, err = s.queryPage(ctx, q.Limit, listFilesFirst, q.Project, q.Limit)
	} else {
		rows, err = s.queryPage(ctx, q.Limit, listFilesAfter, q.Project, q.After.CreatedAt.Unix(), q.After.ID, q.Limit)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: list files: %w", err)
	}
	defer rows.Close()
	files := make([]cdnapi.File, 0, min(q.Limit, listPrealloc))
	// Every row is scanned into the same variables: what Scan points into
	// moves to the heap, and a File and an int64 made anew for each row
	// were two allocations a row, about a sixth of a page's.
	f := cdnapi.File{Project: q.Project}
	var created int64
	dest := []any{&f.ID, &created, &f.Filename, &f.Bytes, &f.Checksum}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("sqlite: list files: %w", err)
		}
		f.CreatedAt = unixTime(created)
		files = append(files, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list files: %w", err)
	}
	return files, nil
}
