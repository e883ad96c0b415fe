package cdnapi

import (
	"context"
	"time"
)

// APIKey is an API key as stored: who it belongs to and its life, never the
// key itself. The key, "cdk_…", is shown once when it is created; the store
// keeps only its SHA-256 hash, so a stolen database yields no usable key.
type APIKey struct {
	ID        string   // "key_" followed by [A-Za-z0-9]; shown by keys list, used by keys revoke
	Hash      [32]byte // SHA-256 of the key; never shown
	Prefix    string   // the key's first characters ("cdk_AbC9"), shown to match a key to its ID; "" for keys made before it was kept
	Project   string   // the project whose files the key lists
	Label     string   // an operator's note, may be empty
	CreatedAt time.Time
	ExpiresAt time.Time // zero: never expires
	LastUsed  time.Time // zero: never used; coarse (about a minute)
	RevokedAt time.Time // zero: not revoked
}

// Usable reports whether k may authenticate a request at now: not revoked
// and not expired.
func (k APIKey) Usable(now time.Time) bool {
	return k.RevokedAt.IsZero() && (k.ExpiresAt.IsZero() || now.Before(k.ExpiresAt))
}

// KeyStore keeps API keys. Both engines implement it and pass
// storetest.RunKeys. Times are stored as whole seconds, UTC.
type KeyStore interface {
	// CreateKey stores k. Its ID and Hash must be new.
	CreateKey(ctx context.Context, k APIKey) error
	// APIKeys returns the keys of project, or of every project when project
	// is "", oldest first (created_at, then id), revoked and expired ones
	// included.
	APIKeys(ctx context.Context, project string) ([]APIKey, error)
	// RevokeKey marks the key with id revoked at at, or returns ErrNotFound.
	// Revoking a revoked key keeps its first revocation time.
	RevokeKey(ctx context.Context, id string, at time.Time) error
	// TouchKeys records when keys were last used, by ID: each key's
	// LastUsed becomes the later of its stored value and the given time.
	// Unknown IDs are skipped.
	TouchKeys(ctx context.Context, used map[string]time.Time) error
}
