// Package teststore opens real, migrated stores for the tests of the
// packages that use a cdnapi.Store: a SQLite file in the test's temporary
// directory, or a fresh schema on the throwaway PostgreSQL cluster of
// internal/pgtest. Each store is closed when its test ends.
//
// The engines' own tests do not use it: it imports them.
package teststore

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/pgtest"
	"github.com/cdnapi/cdnapi/internal/postgres"
	"github.com/cdnapi/cdnapi/internal/sqlite"
)

// SQLite returns a migrated SQLite store in a new file under tb's temporary
// directory.
func SQLite(tb testing.TB) *sqlite.Store {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := sqlite.Open(ctx, filepath.Join(tb.TempDir(), "cdnapi.db"), sqlite.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	if err := s.Migrate(ctx); err != nil {
		tb.Fatal(err)
	}
	return s
}

// Postgres returns a migrated PostgreSQL store in a fresh schema of the
// shared test cluster. Like every pgtest cluster, it skips tb when
// PostgreSQL is not installed, and fails it when CI=true. A test binary that
// uses it should call pgtest.Main from its TestMain.
func Postgres(tb testing.TB) *postgres.Store {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := postgres.Open(ctx, pgtest.NewSchema(tb), postgres.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	if err := s.Migrate(ctx); err != nil {
		tb.Fatal(err)
	}
	return s
}

// Engine names an engine and opens a fresh store on it.
type Engine struct {
	Name string
	Open func(tb testing.TB) cdnapi.Store
}

// Engines are every engine, for tests that must hold on each.
var Engines = []Engine{
	{"sqlite", func(tb testing.TB) cdnapi.Store { return SQLite(tb) }},
	{"postgres", func(tb testing.TB) cdnapi.Store { return Postgres(tb) }},
}
