package sqlite

import (
	"context"
	"fmt"

	"github.com/cdnapi/cdnapi"
)

// fileStamps reads a project's files in the order of the table, which is
// clustered on (project, created_at, id): one range scan of the project's
// rows, without the checksums, which a sync does not compare.
const fileStamps = `SELECT id, filename, bytes, created_at FROM files WHERE project = ?`

// FileStamps calls fn with the stamp of every file of project, in one query:
// one read transaction, so one snapshot of the list. The query watches ctx,
// since a project may hold millions of files.
func (s *Store) FileStamps(ctx context.Context, project string, fn func(cdnapi.FileStamp) error) error {
	rows, err := s.query(ctx, fileStamps, project)
	if err != nil {
		return fmt.Errorf("sqlite: file stamps: %w", err)
	}
	defer rows.Close()
	// One set of variables for every row, as in ListFiles.
	var f cdnapi.FileStamp
	dest := []any{&f.ID, &f.Filename, &f.Bytes, &f.CreatedAt}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return fmt.Errorf("sqlite: file stamps: %w", err)
		}
		if err := fn(f); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqlite: file stamps: %w", err)
	}
	return nil
}
