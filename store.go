package cdnapi

import (
	"context"
	"time"
)

// Position is a place in a list ordered newest first, by created_at DESC and
// then id DESC. Listing "after" a Position returns the rows that sort strictly
// after it, so rows inserted while a client pages never cause duplicates or
// skips among the rows that were there before.
type Position struct {
	CreatedAt time.Time
	ID        string
}

// FileQuery selects a page of a project's files.
type FileQuery struct {
	Project string
	After   *Position // nil starts at the newest file
	Limit   int       // the most rows to return; at least 1
}

// AssetQuery selects a page of assets.
type AssetQuery struct {
	Region string    // a region code, or "" for every region
	After  *Position // nil starts at the newest asset
	Limit  int       // the most rows to return; at least 1
}

// Writer writes records. Every method upserts: a record replaces any with
// the same ID (for regions, the same code), so writing the same records twice
// leaves the store as writing them once. A call writes all of its records or
// none. Callers may reuse the slices once a call returns.
type Writer interface {
	PutFiles(ctx context.Context, files []File) error
	PutAssets(ctx context.Context, assets []Asset) error
	PutRegions(ctx context.Context, regions []Region) error
}

// Store is where cdnapi keeps its data. Every engine (SQLite, PostgreSQL)
// implements it and passes the behaviour suite in internal/storetest.
//
// List methods run keyset range scans: their cost does not grow with the depth
// of the page. An error that is not ErrNotFound or an *Error means the store
// could not answer; the HTTP edge reports it as storage_unavailable.
type Store interface {
	// ListFiles returns up to q.Limit files of q.Project, newest first.
	ListFiles(ctx context.Context, q FileQuery) ([]File, error)
	// ListAssets returns up to q.Limit assets, newest first, of one region
	// or of all.
	ListAssets(ctx context.Context, q AssetQuery) ([]Asset, error)
	// ListRegions returns every region, ordered by code.
	ListRegions(ctx context.Context) ([]Region, error)
	// Region returns the region with the given code, or ErrNotFound.
	Region(ctx context.Context, code string) (Region, error)

	// Writer's methods each write in a transaction of their own.
	Writer
	// Write runs fn in one transaction: all that fn writes through w is
	// committed when fn returns nil; nothing is if it returns an error, ctx ends
	// or the process dies. Other writers wait while it runs, so callers keep it
	// to one unit of work (one ingest).
	Write(ctx context.Context, fn func(w Writer) error) error
	// DeleteAssetsBefore deletes up to limit assets created before cutoff,
	// oldest first, in one short transaction, and returns how many it deleted.
	DeleteAssetsBefore(ctx context.Context, cutoff time.Time, limit int) (int, error)
	// SetRegionStatus sets the status of the region with code, or returns
	// ErrNotFound. A non-zero until ends the status then (see
	// Region.WithStatusUntil); a zero until sets a status without an end.
	SetRegionStatus(ctx context.Context, code string, status Status, until time.Time) error

	// CursorSecret returns the key that authenticates cursors. The first
	// call on an empty database generates a random key and stores it; every
	// later call, from any process sharing the database, returns that key.
	CursorSecret(ctx context.Context) ([]byte, error)

	// ComponentOverrides returns the component statuses operators have set,
	// ordered by name. Expired overrides may be included; see Active.
	ComponentOverrides(ctx context.Context) ([]ComponentOverride, error)
	// SetComponentOverride sets, or replaces, the override of o.Name.
	SetComponentOverride(ctx context.Context, o ComponentOverride) error
	// ClearComponentOverride removes the override of a component, if any.
	ClearComponentOverride(ctx context.Context, name string) error

	// Ping checks that the store answers.
	Ping(ctx context.Context) error
	// Close releases the store's connections.
	Close() error
}
