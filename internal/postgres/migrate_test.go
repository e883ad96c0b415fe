package postgres

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/cdnapi/cdnapi/internal/pgtest"
)

// openUnmigrated opens a Store on dsn without migrating it.
func openUnmigrated(t *testing.T, dsn string) *Store {
	t.Helper()
	s, err := Open(t.Context(), dsn, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestMigrateIsIdempotent(t *testing.T) {
	t.Parallel()
	s := openUnmigrated(t, pgtest.NewDatabase(t))
	ctx := t.Context()
	if err := s.CheckSchema(ctx); !errors.Is(err, ErrSchemaPending) {
		t.Fatalf("CheckSchema on an empty database = %v, want ErrSchemaPending", err)
	}
	for i := range 3 {
		if err := s.Migrate(ctx); err != nil {
			t.Fatalf("Migrate #%d: %v", i+1, err)
		}
	}
	if err := s.CheckSchema(ctx); err != nil {
		t.Fatalf("CheckSchema after Migrate: %v", err)
	}
	db, binary, err := s.SchemaVersion(ctx)
	if err != nil || db != binary || binary < 1 {
		t.Errorf("SchemaVersion = %d, %d, %v; want equal and at least 1", db, binary, err)
	}
}

// Replicas that start together each run Migrate; each migration must run
// once, and every one of them must succeed.
func TestMigrateConcurrently(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	const n = 3
	stores := make([]*Store, n) // separate pools, as separate processes
	for i := range stores {
		stores[i] = openUnmigrated(t, dsn)
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, s := range stores {
		wg.Go(func() { errs[i] = s.Migrate(t.Context()) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	var rows, distinct int
	err := stores[0].primary.QueryRow(t.Context(),
		`SELECT count(*), count(DISTINCT version_id) FROM goose_db_version`).Scan(&rows, &distinct)
	if err != nil {
		t.Fatal(err)
	}
	if rows != distinct {
		t.Errorf("goose_db_version has %d rows for %d versions: a migration ran twice", rows, distinct)
	}
	if err := stores[0].CheckSchema(t.Context()); err != nil {
		t.Error(err)
	}
}

// A database that a newer binary migrated is refused, by CheckSchema and by
// Migrate, with an error that says so and gives both versions.
func TestSchemaNewerThanBinary(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	_, binary, err := s.SchemaVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.primary.Exec(ctx, `INSERT INTO goose_db_version (version_id, is_applied) VALUES ($1, true)`, binary+1)
	if err != nil {
		t.Fatal(err)
	}
	for name, call := range map[string]func(context.Context) error{"CheckSchema": s.CheckSchema, "Migrate": s.Migrate} {
		err := call(ctx)
		if !errors.Is(err, ErrSchemaNewer) {
			t.Errorf("%s = %v, want ErrSchemaNewer", name, err)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "newer than this binary") {
			t.Errorf("%s error %q does not say what is wrong", name, msg)
		}
	}
}

func TestOpenRefusesBadDSN(t *testing.T) {
	t.Parallel()
	const secret = "hunter2"
	for _, dsn := range []string{
		"postgres://u:" + secret + "@127.0.0.1:notaport/db",
		"host=127.0.0.1 password=" + secret + " sslmode=bogus",
	} {
		s, err := Open(t.Context(), dsn, Options{})
		if err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded", dsn)
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("Open's error shows the password: %v", err)
		}
	}
	if _, err := Open(t.Context(), "postgres://127.0.0.1/db", Options{ReadDSN: "postgres://%zz"}); err == nil {
		t.Error("Open with a bad ReadDSN succeeded")
	}
}
