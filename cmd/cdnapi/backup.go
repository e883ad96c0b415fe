package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/cdnapi/cdnapi/internal/sqlite"
)

const backupSynopsis = `backup [--db DSN] PATH

Writes a consistent copy of the SQLite database to PATH, which must not
exist. It is safe while serve runs and writes: the copy is one snapshot,
taken without stopping readers or writers, checked, and renamed into place
only when whole. To restore, stop serve and put the copy in the database's
place (remove the old file's -wal and -shm files with it).

PostgreSQL has its own tools: pg_dump --format=custom for a logical copy
(restore with pg_restore), or pg_basebackup with WAL archiving for
point-in-time recovery.`

func runBackup(ctx context.Context, env *environment, args []string) error {
	fs := newFlagSet("backup", backupSynopsis, env.stdout)
	db := addStoreFlags(fs, false)
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
	// Opening a missing SQLite file would create an empty database.
	source := strings.TrimPrefix(*db.dsn, "sqlite:")
	if _, err := os.Stat(source); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("backup: no database at %s", source)
	}
	// Not openMigrated: a backup copies the database as it is, and must
	// not change the schema under a running serve of another version.
	st, err := db.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	s, ok := st.(*sqlite.Store)
	if !ok {
		return fmt.Errorf("backup: %s is not a SQLite database", redactDSN(*db.dsn))
	}
	start := time.Now()
	size, err := s.Backup(ctx, path)
	if err != nil {
		return err // "sqlite: backup: …"
	}
	fmt.Fprintf(env.stdout, "backed up %s to %s (%s) in %s\n", source, path,
		humanize.IBytes(uint64(size)), time.Since(start).Round(time.Millisecond))
	return nil
}
