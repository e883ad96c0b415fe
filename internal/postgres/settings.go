package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/jackc/pgx/v5"
)

// cursorSecretName is the settings row of the cursor secret.
const cursorSecretName = "cursor_secret"

// CursorSecret returns the stored cursor secret, generating and storing one
// on first use. It reads the primary, never the replica: a replica that has
// not yet replayed the first caller's insert would make a second process
// generate a secret of its own.
//
// Concurrent first callers, in this process or another, race to insert; the
// losing inserts do nothing (ON CONFLICT DO NOTHING waits for the winner to
// commit), and the read that follows, a new statement with a new snapshot,
// sees the winner's secret.
func (s *Store) CursorSecret(ctx context.Context) ([]byte, error) {
	const get = `SELECT value FROM settings WHERE name = $1`
	var secret []byte
	err := s.primary.QueryRow(ctx, get, cursorSecretName).Scan(&secret)
	if errors.Is(err, pgx.ErrNoRows) {
		fresh := cdnapi.NewCursorSecret()
		_, err = s.primary.Exec(ctx,
			`INSERT INTO settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING`,
			cursorSecretName, fresh)
		if err == nil {
			err = s.primary.QueryRow(ctx, get, cursorSecretName).Scan(&secret)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: cursor secret: %w", err)
	}
	if len(secret) < cdnapi.MinCursorSecret {
		return nil, fmt.Errorf("postgres: cursor secret: stored secret has %d bytes, want at least %d",
			len(secret), cdnapi.MinCursorSecret)
	}
	return secret, nil
}

// ComponentOverrides returns the overrides operators have set, ordered by
// name, expired ones included. It reads the primary, so that an override an
// operator just set is in force at the next evaluation, replica lag or not.
func (s *Store) ComponentOverrides(ctx context.Context) ([]cdnapi.ComponentOverride, error) {
	rows, err := s.primary.Query(ctx,
		`SELECT name, status, until, updated_at, message FROM component_overrides ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("postgres: component overrides: %w", err)
	}
	defer rows.Close()
	var overrides []cdnapi.ComponentOverride
	for rows.Next() {
		var o cdnapi.ComponentOverride
		var until *time.Time
		if err := rows.Scan(&o.Name, &o.Status, &until, &o.UpdatedAt, &o.Message); err != nil {
			return nil, fmt.Errorf("postgres: component overrides: %w", err)
		}
		if until != nil {
			o.Until = until.UTC()
		}
		o.UpdatedAt = o.UpdatedAt.UTC()
		overrides = append(overrides, o)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: component overrides: %w", err)
	}
	return overrides, nil
}

// SetComponentOverride sets, or replaces, the override of o.Name. A zero
// o.Until means no end; a zero o.UpdatedAt is stored as now. Times are
// stored as whole seconds. o.Status must be valid.
func (s *Store) SetComponentOverride(ctx context.Context, o cdnapi.ComponentOverride) error {
	if o.Name == "" || !o.Status.Valid() {
		return fmt.Errorf("postgres: set component override: want a name and a valid status, have %q and %q", o.Name, o.Status)
	}
	var until *time.Time
	if !o.Until.IsZero() {
		t := wholeSecondUTC(o.Until)
		until = &t
	}
	if o.UpdatedAt.IsZero() {
		o.UpdatedAt = time.Now()
	}
	_, err := s.primary.Exec(ctx, `INSERT INTO component_overrides (name, status, until, updated_at, message)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (name) DO UPDATE SET
			status = excluded.status, until = excluded.until, updated_at = excluded.updated_at,
			message = excluded.message`,
		o.Name, string(o.Status), until, wholeSecondUTC(o.UpdatedAt), o.Message)
	if err != nil {
		return fmt.Errorf("postgres: set component override: %w", err)
	}
	return nil
}

// ClearComponentOverride removes the override of the named component.
// Clearing a component that has none is not an error.
func (s *Store) ClearComponentOverride(ctx context.Context, name string) error {
	if _, err := s.primary.Exec(ctx, `DELETE FROM component_overrides WHERE name = $1`, name); err != nil {
		return fmt.Errorf("postgres: clear component override: %w", err)
	}
	return nil
}
