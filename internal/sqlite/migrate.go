package sqlite

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"

	"github.com/cdnapi/cdnapi"
)

//go:embed migrations/*.sql
var embedded embed.FS

// ErrSchemaNewer is returned by Migrate when the database has migrations
// applied that this binary does not know: a newer release wrote it, and this
// one must not serve or change it.
var ErrSchemaNewer = errors.New("sqlite: database schema is newer than this binary")

// provider returns a goose provider on the writer. Every migration runs in a
// transaction on the provider's one connection: a migration marked
// "NO TRANSACTION" would ask the pool for a second connection and deadlock,
// so none may be.
func (s *Store) provider() (*goose.Provider, error) {
	migrations, err := fs.Sub(embedded, "migrations")
	if err != nil {
		return nil, err
	}
	return goose.NewProvider(database.DialectSQLite3, s.write, migrations,
		goose.WithDisableGlobalRegistry(true), // only the migrations embedded here
		goose.WithLogger(goose.NopLogger()),   // callers report; the library stays quiet
	)
}

// Migrate applies every pending migration, each in its own transaction. It
// is idempotent. It refuses, with ErrSchemaNewer, a database that a newer
// binary has migrated past what this one knows.
func (s *Store) Migrate(ctx context.Context) error {
	_, err := s.ApplyMigrations(ctx)
	return err
}

// ApplyMigrations is Migrate, and reports each migration applied and the
// schema's version after.
func (s *Store) ApplyMigrations(ctx context.Context) (cdnapi.Migrations, error) {
	var out cdnapi.Migrations
	p, err := s.provider()
	if err != nil {
		return out, fmt.Errorf("sqlite: migrate: %w", err)
	}
	db, binary, err := p.GetVersions(ctx)
	if err != nil {
		return out, fmt.Errorf("sqlite: migrate: %w", err)
	}
	if db > binary {
		return out, fmt.Errorf("%w (database at version %d, binary knows up to %d)", ErrSchemaNewer, db, binary)
	}
	applied, err := p.Up(ctx)
	out = migrations(applied, db)
	if err != nil {
		return out, fmt.Errorf("sqlite: migrate: %w", err)
	}
	if len(applied) > 0 {
		// A migration that rewrites a table fills the writer's page cache
		// (up to Options.WriterCacheKiB), which the connection would otherwise keep
		// for as long as serve runs: 383 MiB of RSS after 00007 on a million
		// files. Hand it back; the writer of serve needs little.
		if _, err := s.write.ExecContext(ctx, "PRAGMA shrink_memory"); err != nil {
			return out, fmt.Errorf("sqlite: migrate: release the writer's cache: %w", err)
		}
	}
	return out, nil
}

// migrations turns goose's results into cdnapi's, from the version the
// schema had before.
func migrations(results []*goose.MigrationResult, before int64) cdnapi.Migrations {
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
