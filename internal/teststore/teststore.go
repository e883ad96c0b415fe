// Package teststore opens real, migrated stores for the tests of the
// packages that use a cdnapi.Store: a SQLite file in the test's temporary
// directory, or a fresh schema on the throwaway PostgreSQL cluster of
// internal/pgtest. Each store is closed when its test ends.
//
// The engines' own tests do not use it: it imports them.
package teststore

import (
	"context"
	"io"
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
	s, err := openSQLite(ctx, sqliteFile(tb))
	return closing(tb, s, err)
}

// Postgres returns a migrated PostgreSQL store in a fresh schema of the
// shared test cluster. Like every pgtest cluster, it skips tb when
// PostgreSQL is not installed, and fails it when CI=true. A test binary that
// uses it should call pgtest.Main from its TestMain.
func Postgres(tb testing.TB) *postgres.Store {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := openPostgres(ctx, pgtest.NewSchema(tb))
	return closing(tb, s, err)
}

// Engine names an engine and opens stores on it.
type Engine struct {
	Name string
	// Database returns the address of a fresh, empty database for tb (a
	// file's path, a DSN), which goes when tb ends.
	Database func(tb testing.TB) string
	// OpenAt opens the store at a Database address and migrates it; the
	// caller closes it. A test may open one address again after closing
	// it, as a restarted server would.
	OpenAt func(ctx context.Context, where string) (cdnapi.Store, error)
}

// Open returns a migrated store on a fresh database of e, closed when tb
// ends.
func (e Engine) Open(tb testing.TB) cdnapi.Store {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := e.OpenAt(ctx, e.Database(tb))
	return closing(tb, s, err)
}

// Engines are every engine, for tests that must hold on each.
var Engines = []Engine{
	{"sqlite", sqliteFile, func(ctx context.Context, path string) (cdnapi.Store, error) { return openSQLite(ctx, path) }},
	{"postgres", pgtest.NewSchema, func(ctx context.Context, dsn string) (cdnapi.Store, error) { return openPostgres(ctx, dsn) }},
}

// sqliteFile is the Database of SQLite: a new file under tb's temporary
// directory.
func sqliteFile(tb testing.TB) string { return filepath.Join(tb.TempDir(), "cdnapi.db") }

// openSQLite and openPostgres open the store at where and migrate it.
func openSQLite(ctx context.Context, path string) (*sqlite.Store, error) {
	s, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err == nil {
		err = migrate(ctx, s)
	}
	return s, err
}

func openPostgres(ctx context.Context, dsn string) (*postgres.Store, error) {
	s, err := postgres.Open(ctx, dsn, postgres.Options{})
	if err == nil {
		err = migrate(ctx, s)
	}
	return s, err
}

// migrate migrates s, and closes it if that fails.
func migrate(ctx context.Context, s interface {
	Migrate(context.Context) error
	io.Closer
}) error {
	err := s.Migrate(ctx)
	if err != nil {
		s.Close()
	}
	return err
}

// closing fails tb on err, the error of opening s, and otherwise closes s
// when tb ends.
func closing[S io.Closer](tb testing.TB, s S, err error) S {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}
