package cdnapi

import (
	"context"
	"time"
)

// Engine is a storage engine as the program holds it: every job of a Store,
// the API keys and the status history, the count of recent assets that
// serve's start-up forecast of retention reads, the narrow read of a project's files
// that `origin sync` compares with its folder, the schema's migrations, and what
// the metrics report of it (its name and its connection pools). Both
// engines (internal/sqlite, internal/postgres) implement it, and so does
// the decorator that measures them (internal/storemetrics), so that
// cmd/cdnapi wires either one without knowing which it has.
//
// Engine is declared once, here, because the program and the decorator
// share it; the smaller interfaces of this package are the jobs it gathers
// (see Store for the convention).
type Engine interface {
	Store
	KeyStore
	StatusHistory
	FileStampReader
	AssetCounter
	// Migrate applies the migrations the database lacks. It refuses a
	// database whose schema is newer than this binary.
	Migrate(ctx context.Context) error
	// ApplyMigrations is Migrate that reports what it did: each migration
	// applied, and the schema's version after.
	ApplyMigrations(ctx context.Context) (Migrations, error)
	// Name is the engine's name in metrics and messages: "sqlite" or
	// "postgres".
	Name() string
	// PoolStats returns the state of each of the engine's connection pools.
	// It is cheap and safe to call concurrently (at every scrape).
	PoolStats() []PoolStats
}

// Migrations is what an Engine's ApplyMigrations did.
type Migrations struct {
	Applied []Migration // in the order applied; empty when none was pending
	Version int64       // the schema's version after
}

// Migration is one migration applied to a database's schema.
type Migration struct {
	Version int64
	Name    string        // its file, such as "00007_files_clustered_by_list.sql"
	Took    time.Duration // how long it ran
}

// PoolStats is the state of one connection pool of an engine.
type PoolStats struct {
	Pool  string // which pool: for SQLite "read" or "write", for PostgreSQL "primary" or "replica"
	InUse int    // connections handed out
	Idle  int    // connections open and waiting for work
	Max   int    // the most the pool opens; 0 for no bound
	Waits int64  // acquisitions so far that had to wait for a connection
}
