package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/cdnapi/cdnapi/internal/sqlite"
)

const backupSynopsis = `backup [--db DSN] PATH

Writes a consistent copy of the SQLite database to PATH, which must not
exist. A PATH that ends in / or is a directory gets a copy named
cdnapi-<UTC time>.db inside it; a directory of PATH that does not exist yet
is created (mode 0700), and the command says so. It is safe while serve runs and writes: the copy is one snapshot,
taken without stopping readers or writers, checked, and renamed into place
only when whole. To restore, stop serve and put the copy in the database's
place (remove the old file's -wal and -shm files with it).

PostgreSQL has its own tools: pg_dump --format=custom for a logical copy
(restore with pg_restore), or pg_basebackup with WAL archiving for
point-in-time recovery.`

func runBackup(ctx context.Context, env *environment, args []string) error {
	fs := newFlagSet("backup", backupSynopsis, env.stdout)
	db := addStoreFlags(fs, fewWrites)
	args, err := parseArgs(fs, args, env.getenv)
	if err != nil {
		return err
	}
	if len(args) != 1 || args[0] == "" {
		return usageError{"backup: want the PATH of the copy (see cdnapi backup --help)"}
	}
	path := args[0]
	if isPostgres(*db.dsn) {
		return usageError{"backup: cdnapi backup copies SQLite; for PostgreSQL use pg_dump --format=custom, or pg_basebackup (see cdnapi backup --help)"}
	}
	// Not openMigrated: a backup copies the database as it is, and must
	// not change the schema under a running serve of another version. open
	// refuses a database that does not exist.
	st, err := db.open(ctx)
	if err != nil {
		return err
	}
	source, _ := sqlitePath(*db.dsn) // open has checked it
	start := time.Now()
	path, err = backupPath(path, start, env)
	if err != nil {
		return err
	}
	defer st.Close()
	s, ok := st.(*sqlite.Store)
	if !ok {
		return fmt.Errorf("backup: %s is not a SQLite database", redactDSN(*db.dsn))
	}
	size, err := s.Backup(ctx, path)
	if err != nil {
		return err // "sqlite: backup: …"
	}
	fmt.Fprintf(env.stdout, "backed up %s to %s (%s) in %s\n", source, path,
		humanize.IBytes(uint64(size)), time.Since(start).Round(time.Millisecond))
	return nil
}

// backupPath returns the file a backup to path writes: path itself, or for
// a directory (an existing one, or a path ending in /) a file named after
// the time in it. It creates the directory when it is missing, and says so
// on env's stdout.
func backupPath(path string, now time.Time, env *environment) (string, error) {
	dir, file := filepath.Split(path)
	if file != "" {
		if fi, err := os.Stat(path); err == nil && fi.IsDir() {
			dir, file = path, ""
		}
	}
	if file == "" {
		file = "cdnapi-" + now.UTC().Format("20060102T150405Z") + ".db"
	}
	dir = filepath.Clean(dir) // "" becomes ".", and "a/" becomes "a", which stats as the file it may be
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", fmt.Errorf("backup: create the directory %s: %w", dir, err)
		}
		abs, _ := filepath.Abs(dir)
		fmt.Fprintf(env.stdout, "created the directory %s\n", abs)
	} else if err := dirExists(dir); err != nil {
		return "", fmt.Errorf("backup: %w", err)
	}
	return filepath.Join(dir, file), nil
}
