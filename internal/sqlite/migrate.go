package sqlite

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"
)

//go:embed migrations/*.sql
var embedded embed.FS

// ErrSchemaNewer is returned by Migrate and CheckSchema when the database
// has migrations applied that this binary does not know: a newer release
// wrote it, and this one must not serve or change it.
var ErrSchemaNewer = errors.New("sqlite: database schema is newer than this binary")

// ErrSchemaPending is returned by CheckSchema when the database lacks
// migrations that this binary has; Migrate applies them.
var ErrSchemaPending = errors.New("sqlite: database schema is older than this binary; run migrate")

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

// SchemaVersion returns the schema version of the database (0 when none is
// applied) and the newest version this binary knows.
func (s *Store) SchemaVersion(ctx context.Context) (db, binary int64, err error) {
	p, err := s.provider()
	if err != nil {
		return 0, 0, fmt.Errorf("sqlite: schema version: %w", err)
	}
	db, binary, err = p.GetVersions(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("sqlite: schema version: %w", err)
	}
	return db, binary, nil
}

// CheckSchema returns nil when the database schema is exactly the one this
// binary knows, ErrSchemaNewer (wrapped) when it is newer, and
// ErrSchemaPending (wrapped) when migrations are due.
func (s *Store) CheckSchema(ctx context.Context) error {
	db, binary, err := s.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	switch {
	case db > binary:
		return fmt.Errorf("%w (database at version %d, binary knows up to %d)", ErrSchemaNewer, db, binary)
	case db < binary:
		return fmt.Errorf("%w (database at version %d, binary at %d)", ErrSchemaPending, db, binary)
	}
	return nil
}

// Migrate applies every pending migration, each in its own transaction. It
// is idempotent. It refuses, with ErrSchemaNewer, a database that a newer
// binary has migrated past what this one knows.
func (s *Store) Migrate(ctx context.Context) error {
	p, err := s.provider()
	if err != nil {
		return fmt.Errorf("sqlite: migrate: %w", err)
	}
	db, binary, err := p.GetVersions(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: migrate: %w", err)
	}
	if db > binary {
		return fmt.Errorf("%w (database at version %d, binary knows up to %d)", ErrSchemaNewer, db, binary)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("sqlite: migrate: %w", err)
	}
	return nil
}
