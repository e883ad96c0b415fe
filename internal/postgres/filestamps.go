package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/cdnapi/cdnapi"
)

// fileStamps reads a project's files through files_by_project_created,
// without the checksums, which a sync does not compare.
const fileStamps = `SELECT id, filename, bytes, created_at FROM files WHERE project = $1`

// FileStamps calls fn with the stamp of every file of project, in one
// statement, so from one snapshot. It reads from the primary, never the read
// replica: its caller writes what it learns, and a replica may lag behind
// the writes it made a moment before.
func (s *Store) FileStamps(ctx context.Context, project string, fn func(cdnapi.FileStamp) error) error {
	rows, err := s.primary.Query(ctx, fileStamps, project)
	if err != nil {
		return fmt.Errorf("postgres: file stamps: %w", err)
	}
	defer rows.Close()
	var f cdnapi.FileStamp
	var created time.Time
	for rows.Next() {
		if err := rows.Scan(&f.ID, &f.Filename, &f.Bytes, &created); err != nil {
			return fmt.Errorf("postgres: file stamps: %w", err)
		}
		f.CreatedAt = created.Unix()
		if err := fn(f); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("postgres: file stamps: %w", err)
	}
	return nil
}
