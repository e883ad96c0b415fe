package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Backup writes a consistent copy of the database to path, which must not
// exist, and returns its size in bytes. It is safe while other processes
// serve and write: VACUUM INTO reads one snapshot in a read transaction,
// which in WAL mode neither waits for writers nor makes them wait, so the
// copy holds every transaction committed before it began and none after.
//
// The copy is written next to path under a temporary name, checked with
// PRAGMA quick_check, synced and then renamed, so that path is either
// absent or a whole, sound database, even if the process dies midway. The
// copy is compact (VACUUM) and is a plain SQLite file in rollback-journal
// mode: open it with any SQLite, or serve it with --db.
func (s *Store) Backup(ctx context.Context, path string) (int64, error) {
	if _, err := os.Lstat(path); err == nil {
		return 0, fmt.Errorf("sqlite: backup: %s exists; give a new path", path)
	} else if !errors.Is(err, os.ErrNotExist) {
		return 0, fmt.Errorf("sqlite: backup: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return 0, fmt.Errorf("sqlite: backup: %w", err)
	}
	tmpPath := tmp.Name()
	tmp.Close()
	defer os.Remove(tmpPath) // after the rename, there is nothing left to remove
	// VACUUM INTO wants a new or empty file; CreateTemp made an empty one
	// with a name no one else takes.
	if _, err := s.write.ExecContext(ctx, `VACUUM INTO ?`, tmpPath); err != nil {
		return 0, fmt.Errorf("sqlite: backup: %w", err)
	}
	if err := checkCopy(ctx, tmpPath); err != nil {
		return 0, err
	}
	f, err := os.Open(tmpPath)
	if err != nil {
		return 0, fmt.Errorf("sqlite: backup: %w", err)
	}
	info, err := f.Stat()
	if err == nil {
		err = f.Sync() // VACUUM INTO does not sync what it writes
	}
	f.Close()
	if err != nil {
		return 0, fmt.Errorf("sqlite: backup: %w", err)
	}
	// Link rather than rename: it fails if path appeared meanwhile, where a
	// rename would replace it.
	if err := os.Link(tmpPath, path); err != nil {
		return 0, fmt.Errorf("sqlite: backup: %w", err)
	}
	if dir, err := os.Open(filepath.Dir(path)); err == nil {
		dir.Sync() // make the new name durable; a failure here loses nothing written
		dir.Close()
	}
	return info.Size(), nil
}

// checkCopy runs PRAGMA quick_check on the database at path.
func checkCopy(ctx context.Context, path string) error {
	db, err := sql.Open("sqlite", path+"?_pragma=query_only(1)")
	if err != nil {
		return fmt.Errorf("sqlite: backup: check the copy: %w", err)
	}
	defer db.Close()
	var result string
	if err := db.QueryRowContext(ctx, `PRAGMA quick_check`).Scan(&result); err != nil {
		return fmt.Errorf("sqlite: backup: check the copy: %w", err)
	}
	if result != "ok" {
		return fmt.Errorf("sqlite: backup: the copy fails quick_check: %s", result)
	}
	return nil
}
