package postgres

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi/internal/pgtest"
)

// The tests share one throwaway cluster and take a fresh database each;
// tests that stop a server start a cluster of their own.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// openStore opens a Store on dsn with opts, migrated, and closes it when t
// ends.
func openStore(t testing.TB, dsn string, opts Options) *Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Open(ctx, dsn, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

// newStore returns a migrated Store in a fresh schema of the shared
// cluster: a schema costs milliseconds, a database a copy of template1. It
// also keeps the store honest about living outside the public schema. Tests
// of what spans a database, such as the migration lock, take a database.
func newStore(t testing.TB) *Store {
	t.Helper()
	return openStore(t, pgtest.NewSchema(t), Options{})
}
