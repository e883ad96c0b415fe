package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/cdnapi/cdnapi"
)

var _ cdnapi.KeyStore = (*Store)(nil)

// CreateKey stores k, with its times in whole seconds and an empty scope
// as read. A scope that is not valid is refused by the table's CHECK.
func (s *Store) CreateKey(ctx context.Context, k cdnapi.APIKey) error {
	_, err := s.exec(ctx, `INSERT INTO api_keys
		(id, hash, project, label, created_at, expires_at, last_used_at, revoked_at, prefix, scope, region)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		k.ID, k.Hash[:], k.Project, k.Label, k.CreatedAt.Unix(),
		nullUnix(k.ExpiresAt), nullUnix(k.LastUsed), nullUnix(k.RevokedAt), k.Prefix, string(k.Scope.OrRead()), nullString(k.Region))
	if err != nil {
		return fmt.Errorf("sqlite: create key: %w", err)
	}
	return nil
}

// APIKeys returns the keys of project, or of all projects for "", oldest
// first. Every process calls it every few seconds (internal/auth), so it
// reads through the read pool and never waits behind a long write.
func (s *Store) APIKeys(ctx context.Context, project string) ([]cdnapi.APIKey, error) {
	rows, err := s.query(ctx, `SELECT id, hash, project, label, created_at,
		expires_at, last_used_at, revoked_at, prefix, scope, region FROM api_keys
		WHERE ? = '' OR project = ? ORDER BY created_at, id`, project, project)
	if err != nil {
		return nil, fmt.Errorf("sqlite: api keys: %w", err)
	}
	defer rows.Close()
	var keys []cdnapi.APIKey
	for rows.Next() {
		var k cdnapi.APIKey
		var hash []byte
		var created int64
		var expires, used, revoked sql.NullInt64
		var region sql.NullString
		if err := rows.Scan(&k.ID, &hash, &k.Project, &k.Label, &created, &expires, &used, &revoked, &k.Prefix, &k.Scope, &region); err != nil {
			return nil, fmt.Errorf("sqlite: api keys: %w", err)
		}
		if len(hash) != len(k.Hash) {
			return nil, fmt.Errorf("sqlite: api keys: key %s has a hash of %d bytes", k.ID, len(hash))
		}
		copy(k.Hash[:], hash)
		k.CreatedAt = unixTime(created)
		k.ExpiresAt, k.LastUsed, k.RevokedAt = nullTime(expires), nullTime(used), nullTime(revoked)
		k.Region = region.String
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: api keys: %w", err)
	}
	return keys, nil
}

// RevokeKey marks the key revoked at at, keeping an earlier revocation.
func (s *Store) RevokeKey(ctx context.Context, id string, at time.Time) error {
	res, err := s.exec(ctx,
		`UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?) WHERE id = ?`, at.Unix(), id)
	if err != nil {
		return fmt.Errorf("sqlite: revoke key: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("sqlite: revoke key: %w", err)
	} else if n == 0 {
		return cdnapi.ErrNotFound
	}
	return nil
}

// TouchKeys moves each key's last use forward, in one transaction.
func (s *Store) TouchKeys(ctx context.Context, used map[string]time.Time) error {
	if len(used) == 0 {
		return nil
	}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		for id, at := range used {
			if _, err := tx.ExecContext(ctx, `UPDATE api_keys SET last_used_at = ?
				WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)`, at.Unix(), id, at.Unix()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: touch keys: %w", err)
	}
	return nil
}

// nullUnix is t as nullable unix seconds: NULL for the zero time.
func nullUnix(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.Unix(), Valid: true}
}

// nullTime is the inverse of nullUnix.
func nullTime(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return unixTime(v.Int64)
}
