package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/cdnapi/cdnapi"
)

var _ cdnapi.KeyStore = (*Store)(nil)

// CreateKey stores k, with its times in whole seconds and an empty scope
// as read. A scope that is not valid is refused by the table's CHECK.
func (s *Store) CreateKey(ctx context.Context, k cdnapi.APIKey) error {
	_, err := s.primary.Exec(ctx, `INSERT INTO api_keys
		(id, hash, project, label, created_at, expires_at, last_used_at, revoked_at, prefix, scope, region)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		k.ID, k.Hash[:], k.Project, k.Label, wholeSecondUTC(k.CreatedAt),
		nullTime(k.ExpiresAt), nullTime(k.LastUsed), nullTime(k.RevokedAt), k.Prefix, string(k.Scope.OrRead()), nullString(k.Region))
	if err != nil {
		return fmt.Errorf("postgres: create key: %w", err)
	}
	return nil
}

// APIKeys returns the keys of project, or of all projects for "", oldest
// first. It reads the primary, never the replica, so that a revocation
// takes effect within the refresh interval of internal/auth whatever the
// replica's lag.
func (s *Store) APIKeys(ctx context.Context, project string) ([]cdnapi.APIKey, error) {
	rows, err := s.primary.Query(ctx, `SELECT id, hash, project, label, created_at,
		expires_at, last_used_at, revoked_at, prefix, scope, region FROM api_keys
		WHERE $1 = '' OR project = $1 ORDER BY created_at, id`, project)
	if err != nil {
		return nil, fmt.Errorf("postgres: api keys: %w", err)
	}
	defer rows.Close()
	var keys []cdnapi.APIKey
	for rows.Next() {
		var k cdnapi.APIKey
		var hash []byte
		var expires, used, revoked *time.Time
		var region *string
		if err := rows.Scan(&k.ID, &hash, &k.Project, &k.Label, &k.CreatedAt, &expires, &used, &revoked, &k.Prefix, &k.Scope, &region); err != nil {
			return nil, fmt.Errorf("postgres: api keys: %w", err)
		}
		if len(hash) != len(k.Hash) {
			return nil, fmt.Errorf("postgres: api keys: key %s has a hash of %d bytes", k.ID, len(hash))
		}
		copy(k.Hash[:], hash)
		k.CreatedAt = k.CreatedAt.UTC()
		k.ExpiresAt, k.LastUsed, k.RevokedAt = timeOf(expires), timeOf(used), timeOf(revoked)
		if region != nil {
			k.Region = *region
		}
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: api keys: %w", err)
	}
	return keys, nil
}

// RevokeKey marks the key revoked at at, keeping an earlier revocation.
func (s *Store) RevokeKey(ctx context.Context, id string, at time.Time) error {
	tag, err := s.primary.Exec(ctx,
		`UPDATE api_keys SET revoked_at = coalesce(revoked_at, $1) WHERE id = $2`, wholeSecondUTC(at), id)
	if err != nil {
		return fmt.Errorf("postgres: revoke key: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return cdnapi.ErrNotFound
	}
	return nil
}

// TouchKeys moves each key's last use forward, in one statement.
func (s *Store) TouchKeys(ctx context.Context, used map[string]time.Time) error {
	if len(used) == 0 {
		return nil
	}
	ids := make([]string, 0, len(used))
	ats := make([]time.Time, 0, len(used))
	for id, at := range used {
		ids = append(ids, id)
		ats = append(ats, wholeSecondUTC(at))
	}
	_, err := s.primary.Exec(ctx, `UPDATE api_keys k SET last_used_at = u.at
		FROM unnest($1::text[], $2::timestamptz[]) AS u(id, at)
		WHERE k.id = u.id AND (k.last_used_at IS NULL OR k.last_used_at < u.at)`, ids, ats)
	if err != nil {
		return fmt.Errorf("postgres: touch keys: %w", err)
	}
	return nil
}

// nullTime is t in whole seconds, or NULL for the zero time.
func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := wholeSecondUTC(t)
	return &u
}

// timeOf is the inverse of nullTime.
func timeOf(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}
