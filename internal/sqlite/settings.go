package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/cdnapi/cdnapi"
)

// cursorSecretName is the settings row of the cursor secret.
const cursorSecretName = "cursor_secret"

// CursorSecret returns the stored cursor secret, generating and storing one
// on first use. Concurrent first callers, in this process or another, race
// to insert; the insert that loses does nothing, and every caller reads back
// the one that won.
func (s *Store) CursorSecret(ctx context.Context) ([]byte, error) {
	const get = `SELECT value FROM settings WHERE name = ?`
	var secret []byte
	err := s.queryRow(ctx, get, []any{cursorSecretName}, &secret)
	if errors.Is(err, sql.ErrNoRows) {
		fresh := cdnapi.NewCursorSecret()
		_, err = s.exec(ctx,
			`INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING`,
			cursorSecretName, fresh)
		if err == nil {
			err = s.write.QueryRowContext(ctx, get, cursorSecretName).Scan(&secret)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: cursor secret: %w", err)
	}
	if len(secret) < cdnapi.MinCursorSecret {
		return nil, fmt.Errorf("sqlite: cursor secret: stored secret has %d bytes, want at least %d",
			len(secret), cdnapi.MinCursorSecret)
	}
	return secret, nil
}

// ComponentOverrides returns the overrides operators have set, ordered by
// name, expired ones included.
func (s *Store) ComponentOverrides(ctx context.Context) ([]cdnapi.ComponentOverride, error) {
	rows, err := s.query(ctx,
		`SELECT name, status, until, updated_at, message FROM component_overrides ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: component overrides: %w", err)
	}
	defer rows.Close()
	var overrides []cdnapi.ComponentOverride
	for rows.Next() {
		var o cdnapi.ComponentOverride
		var until sql.NullInt64
		var updated int64
		if err := rows.Scan(&o.Name, &o.Status, &until, &updated, &o.Message); err != nil {
			return nil, fmt.Errorf("sqlite: component overrides: %w", err)
		}
		if until.Valid {
			o.Until = unixTime(until.Int64)
		}
		o.UpdatedAt = unixTime(updated)
		overrides = append(overrides, o)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: component overrides: %w", err)
	}
	return overrides, nil
}

// SetComponentOverride sets, or replaces, the override of o.Name. A zero
// o.Until means no end; a zero o.UpdatedAt is stored as now. Times are
// stored as whole unix seconds. o.Status must be valid.
func (s *Store) SetComponentOverride(ctx context.Context, o cdnapi.ComponentOverride) error {
	if o.Name == "" || !o.Status.Valid() {
		return fmt.Errorf("sqlite: set component override: want a name and a valid status, have %q and %q", o.Name, o.Status)
	}
	var until sql.NullInt64
	if !o.Until.IsZero() {
		until = sql.NullInt64{Int64: o.Until.Unix(), Valid: true}
	}
	if o.UpdatedAt.IsZero() {
		o.UpdatedAt = time.Now()
	}
	_, err := s.exec(ctx, `INSERT INTO component_overrides (name, status, until, updated_at, message)
		VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET
			status = excluded.status, until = excluded.until, updated_at = excluded.updated_at,
			message = excluded.message`,
		o.Name, string(o.Status), until, o.UpdatedAt.Unix(), o.Message)
	if err != nil {
		return fmt.Errorf("sqlite: set component override: %w", err)
	}
	return nil
}

// ClearComponentOverride removes the override of the named component. Clearing
// a component that has none is not an error.
func (s *Store) ClearComponentOverride(ctx context.Context, name string) error {
	if _, err := s.exec(ctx, `DELETE FROM component_overrides WHERE name = ?`, name); err != nil {
		return fmt.Errorf("sqlite: clear component override: %w", err)
	}
	return nil
}
