package sqlite

import (
	"context"
	"errors"
	"fmt"
)

// errSchemaPending is returned by checkSchema when the database lacks
// migrations that this binary has; Migrate applies them.
var errSchemaPending = errors.New("sqlite: database schema is older than this binary; run migrate")

// schemaVersion returns the schema version of the database (0 when none is
// applied) and the newest version this binary knows.
func (s *Store) schemaVersion(ctx context.Context) (db, binary int64, err error) {
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

// checkSchema returns nil when the database schema is exactly the one this
// binary knows, ErrSchemaNewer (wrapped) when it is newer, and
// errSchemaPending (wrapped) when migrations are due.
func (s *Store) checkSchema(ctx context.Context) error {
	db, binary, err := s.schemaVersion(ctx)
	if err != nil {
		return err
	}
	switch {
	case db > binary:
		return fmt.Errorf("%w (database at version %d, binary knows up to %d)", ErrSchemaNewer, db, binary)
	case db < binary:
		return fmt.Errorf("%w (database at version %d, binary at %d)", errSchemaPending, db, binary)
	}
	return nil
}
