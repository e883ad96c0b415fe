package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"path"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/cdnapi/cdnapi"
)

//go:embed migrations/*.sql
var embedded embed.FS

// ErrSchemaNewer is returned by Migrate when the database has migrations
// applied that this binary does not know: a newer release wrote it, and this
// one must not serve or change it.
var ErrSchemaNewer = errors.New("postgres: database schema is newer than this binary")

// versionTable is goose's record of the applied migrations.
const versionTable = "goose_db_version"

// migrationLockKey names the advisory lock that serialises Migrate across
// processes. The lock's key is a hash of it and the schema, so that it does
// not collide with goose's default key, which other applications sharing the
// database may use, and so that deployments in separate schemas of one
// database migrate independently.
const migrationLockKey = "cdnapi migrations in schema "

// Migrate applies every pending migration, each in its own transaction. It
// is idempotent, and safe when several replicas start at once: it holds a
// PostgreSQL session-level advisory lock (goose's session locker) while it
// reads and applies migrations, so one process migrates and the others wait
// for it, polling each second for up to five minutes or until ctx ends, and
// then find nothing pending. The lock belongs to a connection of Migrate's
// own, which it closes at the end, so a crash cannot leave the lock held.
//
// It refuses, with ErrSchemaNewer, a database that a newer binary has
// migrated past what this one knows. Options.StatementTimeout does not apply
// to migrations, which may rebuild large tables.
func (s *Store) Migrate(ctx context.Context) error {
	_, err := s.ApplyMigrations(ctx)
	return err
}

// ApplyMigrations is Migrate, and reports each migration applied and the
// schema's version after.
func (s *Store) ApplyMigrations(ctx context.Context) (cdnapi.Migrations, error) {
	var out cdnapi.Migrations
	db, binary, err := s.schemaVersion(ctx)
	if err != nil {
		return out, fmt.Errorf("postgres: migrate: %w", err)
	}
	if db > binary {
		return out, schemaNewer(db, binary)
	}

	cc := s.primary.Config().ConnConfig // a copy
	cc.RuntimeParams["statement_timeout"] = "0"
	sqlDB := stdlib.OpenDB(*cc)
	defer sqlDB.Close()
	var schema string
	if err := s.primary.QueryRow(ctx, `SELECT coalesce(current_schema(), '')`).Scan(&schema); err != nil {
		return out, fmt.Errorf("postgres: migrate: %w", err)
	}
	key := fnv.New64a()
	key.Write([]byte(migrationLockKey + schema))
	locker, err := lock.NewPostgresSessionLocker(
		lock.WithLockID(int64(key.Sum64())),
		lock.WithLockTimeout(1, 300), // poll each second, for five minutes
	)
	if err != nil {
		return out, fmt.Errorf("postgres: migrate: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, sqlDB, migrations(),
		goose.WithSessionLocker(locker),
		goose.WithDisableGlobalRegistry(true), // only the migrations embedded here
		goose.WithLogger(goose.NopLogger()),   // callers report; the library stays quiet
	)
	if err != nil {
		return out, fmt.Errorf("postgres: migrate: %w", err)
	}
	applied, err := p.Up(ctx)
	out = migrationsFrom(applied, db)
	if err != nil {
		return out, fmt.Errorf("postgres: migrate: %w", err)
	}
	if len(applied) == 0 {
		// Another process may have migrated while this one waited for
		// the lock: report the version the schema has now.
		if out.Version, _, err = s.schemaVersion(ctx); err != nil {
			return out, fmt.Errorf("postgres: migrate: %w", err)
		}
	}
	return out, nil
}

// migrationsFrom turns goose's results into cdnapi's, from the version the
// schema had before.
func migrationsFrom(results []*goose.MigrationResult, before int64) cdnapi.Migrations {
	out := cdnapi.Migrations{Version: before}
	for _, r := range results {
		if r.Error != nil || r.Source == nil {
			continue
		}
		out.Applied = append(out.Applied, cdnapi.Migration{Version: r.Source.Version, Name: path.Base(r.Source.Path), Took: r.Duration})
		out.Version = max(out.Version, r.Source.Version)
	}
	return out
}

func schemaNewer(db, binary int64) error {
	return fmt.Errorf("%w (database at version %d, binary knows up to %d)", ErrSchemaNewer, db, binary)
}

// schemaVersion returns the schema version of the primary (0 when no
// migration is applied) and the newest version this binary knows. Unlike
// goose's own version queries it creates nothing and takes no lock.
func (s *Store) schemaVersion(ctx context.Context) (db, binary int64, err error) {
	binary, err = binaryVersion()
	if err != nil {
		return 0, 0, err
	}
	// The schema goose creates its table in, as goose looks for it.
	var exists bool
	err = s.primary.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_tables
		WHERE schemaname = current_schema() AND tablename = $1)`, versionTable).Scan(&exists)
	if err != nil {
		return 0, 0, fmt.Errorf("schema version: %w", err)
	}
	if !exists {
		return 0, binary, nil
	}
	// goose deletes the row of a migration it rolls back, so the highest
	// row is the version.
	err = s.primary.QueryRow(ctx, `SELECT coalesce(max(version_id), 0) FROM `+versionTable).Scan(&db)
	if err != nil {
		return 0, 0, fmt.Errorf("schema version: %w", err)
	}
	return db, binary, nil
}

// migrations returns the embedded migrations directory.
func migrations() fs.FS {
	sub, err := fs.Sub(embedded, "migrations")
	if err != nil {
		panic(err) // the directory is embedded at build time
	}
	return sub
}

// binaryVersion returns the highest version among the embedded migrations.
func binaryVersion() (int64, error) {
	names, err := fs.Glob(migrations(), "*.sql")
	if err != nil {
		return 0, err
	}
	var newest int64
	for _, name := range names {
		v, err := goose.NumericComponent(path.Base(name))
		if err != nil {
			return 0, fmt.Errorf("migration %s: %w", name, err)
		}
		newest = max(newest, v)
	}
	return newest, nil
}
