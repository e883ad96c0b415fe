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
	Scope     KeyScope // what the key may do; "" is read, as for keys made before scopes
	Region    string   // an edge key's region code ("FRA1"), the only region whose lines it may send; "" for other scopes
	Label     string   // an operator's note, may be empty
	CreatedAt time.Time
	ExpiresAt time.Time // zero: never expires
	LastUsed  time.Time // zero: never used; coarse (about a minute)
	RevokedAt time.Time // zero: not revoked
}

// KeyScope is what an API key may do. A key never does what its scope does
// not name: the routes check the scope of the key they are given, and
// answer 403 permission_denied to any other.
type KeyScope string

// The scopes of API.md.
const (
	// ScopeRead lists the files, regions and assets of the key's project.
	// It is the default, and the scope of every key made before scopes.
	ScopeRead KeyScope = "read"
	// ScopeUpload writes into the key's project's origin through the
	// upload service.
	ScopeUpload KeyScope = "upload"
	// ScopeEdge sends one region's edge log lines to the ingest address.
	ScopeEdge KeyScope = "edge"
)

// KeyScopes are the valid scopes, in the order messages name them.
var KeyScopes = []KeyScope{ScopeRead, ScopeUpload, ScopeEdge}

// Valid reports whether s is one of KeyScopes; "" is not.
func (s KeyScope) Valid() bool {
	return s == ScopeRead || s == ScopeUpload || s == ScopeEdge
}

// OrRead returns s, or ScopeRead when s is empty: a key stored or built
// without a scope is a read key.
func (s KeyScope) OrRead() KeyScope {
	if s == "" {
		return ScopeRead
	}
	return s
}

// KeyIdentity is what a verified key says about the request that carries
// it: the key's ID, its project, its scope and, for an edge key, its
// region; never the key itself.
type KeyIdentity struct {
	ID, Project string
	Scope       KeyScope
	Region      string // ScopeEdge: the one region whose lines the key may send; else ""
}

// CheckKeyRegion reports what is wrong with region for a key of scope: an
// edge key is bound to exactly one region, so it needs a well-formed code,
// and any other key takes none. It returns "" when the pair is valid.
func CheckKeyRegion(scope KeyScope, region string) string {
	switch {
	case scope.OrRead() == ScopeEdge && region == "":
		return "an edge key needs the region whose lines it sends, such as FRA1"
	case scope.OrRead() == ScopeEdge && !ValidRegionCode(region):
		return "a region code is three upper-case letters and a digit, such as FRA1"
	case scope.OrRead() != ScopeEdge && region != "":
		return "only an edge key is bound to a region"
	}
	return ""
}

// CanaryProject is the project reserved for the status evaluator's upload
// canary. Only serve makes keys for it, through the store directly; keys
// create refuses it, so that no operator's key can write where the canary
// measures.
const CanaryProject = "cdnapi-canary"

// ReservedProject reports whether p is reserved for cdnapi itself, so
// that no key may be created for it by hand.
func ReservedProject(p string) bool { return p == CanaryProject }

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
