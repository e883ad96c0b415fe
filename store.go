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

// Position returns f's place in the lists of files.
func (f File) Position() Position { return Position{CreatedAt: f.CreatedAt, ID: f.ID} }

// Position returns a's place in the lists of assets.
func (a Asset) Position() Position { return Position{CreatedAt: a.CreatedAt, ID: a.ID} }

// Position returns i's place in the list of incidents, which orders them by
// the time they started.
func (i Incident) Position() Position { return Position{CreatedAt: i.StartedAt, ID: i.ID} }

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

// The convention for this package's interfaces. An interface is declared
// here only for what the adapters (the engines, the rate limiters)
// implement, and it is one of three kinds:
//
//   - a job: a small interface of the methods for one task, named for it
//     (FileReader, Transactor, KeyStore, LogPositionWriter, …), in the file
//     of its domain. A consumer asks for the smallest job that serves it
//     (httpapi a ListReader, ingest a Transactor, auth a KeyStore). A job
//     no package asks for by name (RegionStatusWriter, AssetPruner,
//     OverrideStore, LogPositionReader, Lifecycle) is still declared, as a
//     named part of Store, so that each method set is documented once.
//   - Store: the jobs every engine does, which the behaviour suite
//     (internal/storetest) checks on both engines.
//   - Engine: all of an engine as the program holds it (engine.go).
//
// A consumer that needs some other method set declares it beside itself,
// unexported, and never a second copy of one declared here. A new
// capability of the store (API keys, status history, …) is a new job,
// which the engines implement; Store embeds it only when every caller that
// holds a Store needs it, and Engine when the program does.
//
// A method that finds no record returns ErrNotFound. Any other error that is
// not an *Error means the store could not answer; the HTTP edge reports it
// as storage_unavailable.

// FileReader lists files.
type FileReader interface {
	// ListFiles returns up to q.Limit files of q.Project, newest first.
	ListFiles(ctx context.Context, q FileQuery) ([]File, error)
}

// AssetReader lists assets.
type AssetReader interface {
	// ListAssets returns up to q.Limit assets, newest first, of one region
	// or of all.
	ListAssets(ctx context.Context, q AssetQuery) ([]Asset, error)
}

// RegionReader reads regions.
type RegionReader interface {
	// ListRegions returns every region, ordered by code.
	ListRegions(ctx context.Context) ([]Region, error)
	// Region returns the region with the given code, or ErrNotFound.
	Region(ctx context.Context, code string) (Region, error)
}

// ListReader is every list the read API serves. Its methods run keyset
// range scans: their cost does not grow with the depth of the page.
type ListReader interface {
	FileReader
	AssetReader
	RegionReader
}

// Writer writes records inside the transaction of a Transactor's Write.
// Every Put method upserts: a record replaces any with the same ID (for regions,
// the same code), so writing the same records twice leaves the store as
// writing them once; among records of one call that share a key, the last
// wins. Callers may reuse the slices once a call returns.
type Writer interface {
	PutFiles(ctx context.Context, files []File) error
	PutAssets(ctx context.Context, assets []Asset) error
	PutRegions(ctx context.Context, regions []Region) error
	// DeleteFiles deletes the files of project whose ID is in ids. An ID
	// that no file of project has (none, or another project's) is skipped:
	// deleting twice leaves the store as deleting once.
	DeleteFiles(ctx context.Context, project string, ids []string) error
	// MoveLogPosition commits a follower's position with the rows it
	// covers; it is not an upsert but a compare-and-set (see
	// LogPositionWriter).
	LogPositionWriter
}

// Transactor writes records in transactions.
type Transactor interface {
	// Write runs fn in one transaction: all that fn writes through w is
	// committed when fn returns nil; nothing is if it returns an error, ctx
	// ends or the process dies. Other writers may wait while it runs, so
	// callers keep it to one unit of work (one ingest).
	Write(ctx context.Context, fn func(w Writer) error) error
}

// RegionStatusWriter changes the status of regions, as operators do.
type RegionStatusWriter interface {
	// SetRegionStatus sets the status of the region with code, or returns
	// ErrNotFound. The caller passes a valid Status. A non-zero until ends
	// the status then (see Region.WithStatusUntil); a zero until sets a
	// status without an end.
	SetRegionStatus(ctx context.Context, code string, status Status, until time.Time) error
}

// AssetPruner deletes old assets.
type AssetPruner interface {
	// DeleteAssetsBefore deletes up to limit assets created before cutoff,
	// oldest first, in one short transaction, and returns how many it
	// deleted.
	DeleteAssetsBefore(ctx context.Context, cutoff time.Time, limit int) (int, error)
}

// AssetCounter measures how fast assets arrive.
type AssetCounter interface {
	// CountAssetsSince counts the assets created at or after since, the
	// newest first, up to limit, and returns how many it counted and the
	// created_at of the oldest of them (zero when none). It reads at most
	// limit index entries, so that a caller can bound its cost at any
	// write rate.
	CountAssetsSince(ctx context.Context, since time.Time, limit int) (int, time.Time, error)
}

// AssetPartitioner keeps the assets in partitions by time, which expire
// whole (PostgreSQL: a partition per UTC day). It is not part of Store: an
// engine with one table (SQLite) has none, and retention asks for it.
type AssetPartitioner interface {
	// MakeAssetPartitions makes the partitions of the times from from to
	// to that do not exist yet, moving into each the rows it would have
	// held that were written while it did not exist, and returns how many
	// it made.
	MakeAssetPartitions(ctx context.Context, from, to time.Time) (int, error)
	// DropAssetPartitionsBefore drops each partition that holds only times
	// before cutoff, and returns how many it dropped and the engine's
	// estimate of how many assets they held.
	DropAssetPartitionsBefore(ctx context.Context, cutoff time.Time) (partitions int, assets int64, err error)
}

// SecretKeeper keeps the cursor secret that replicas share.
type SecretKeeper interface {
	// CursorSecret returns the key that authenticates cursors. The first
	// call on an empty database generates a random key and stores it; every
	// later call, from any process sharing the database, returns that key.
	CursorSecret(ctx context.Context) ([]byte, error)
}

// OverrideStore keeps the component statuses operators set by hand.
type OverrideStore interface {
	// ComponentOverrides returns the component statuses operators have set,
	// ordered by name. Expired overrides may be included; see Active.
	ComponentOverrides(ctx context.Context) ([]ComponentOverride, error)
	// SetComponentOverride sets, or replaces, the override of o.Name.
	SetComponentOverride(ctx context.Context, o ComponentOverride) error
	// ClearComponentOverride removes the override of a component, if any.
	ClearComponentOverride(ctx context.Context, name string) error
}

// Lifecycle is a store's connection to its database.
type Lifecycle interface {
	// Ping checks that the store answers. An error that wraps ErrDegraded
	// means it answered, but without part of itself.
	Ping(ctx context.Context) error
	// Close releases the store's connections.
	Close() error
}

// Store is where cdnapi keeps its data: every engine (SQLite, PostgreSQL)
// implements it and passes the behaviour suite in internal/storetest.
type Store interface {
	ListReader
	Transactor
	RegionStatusWriter
	AssetPruner
	SecretKeeper
	OverrideStore
	LogPositionReader
	Lifecycle
}
