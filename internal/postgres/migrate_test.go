package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/pgtest"
	"github.com/cdnapi/cdnapi/internal/storetest"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
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

// migrator is goose's provider of this package's migrations on s's primary,
// for a test that moves the schema to a version of its own; unlike
// Migrate's, it takes no lock.
func migrator(t *testing.T, s *Store) *goose.Provider {
	t.Helper()
	db := stdlib.OpenDBFromPool(s.primary)
	t.Cleanup(func() { db.Close() })
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations(),
		goose.WithDisableGlobalRegistry(true), goose.WithLogger(goose.NopLogger()))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// openAt opens a Store on dsn, a database without a schema, migrated up to
// version and no further.
func openAt(t *testing.T, dsn string, version int64) (*Store, *goose.Provider) {
	t.Helper()
	s := openUnmigrated(t, dsn)
	p := migrator(t, s)
	if _, err := p.UpTo(t.Context(), version); err != nil {
		t.Fatalf("migrating to version %d: %v", version, err)
	}
	return s, p
}

func TestMigrateIsIdempotent(t *testing.T) {
	t.Parallel()
	s := openUnmigrated(t, pgtest.NewDatabase(t))
	ctx := t.Context()
	if err := s.checkSchema(ctx); !errors.Is(err, errSchemaPending) {
		t.Fatalf("checkSchema on an empty database = %v, want errSchemaPending", err)
	}
	for i := range 3 {
		if err := s.Migrate(ctx); err != nil {
			t.Fatalf("Migrate #%d: %v", i+1, err)
		}
	}
	if err := s.checkSchema(ctx); err != nil {
		t.Fatalf("checkSchema after Migrate: %v", err)
	}
	db, binary, err := s.schemaVersion(ctx)
	if err != nil || db != binary || binary < 1 {
		t.Errorf("schemaVersion = %d, %d, %v; want equal and at least 1", db, binary, err)
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
	if err := stores[0].checkSchema(t.Context()); err != nil {
		t.Error(err)
	}
}

// A database that a newer binary migrated is refused, by checkSchema and by
// Migrate, with an error that says so and gives both versions.
func TestSchemaNewerThanBinary(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	_, binary, err := s.schemaVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.primary.Exec(ctx, `INSERT INTO goose_db_version (version_id, is_applied) VALUES ($1, true)`, binary+1)
	if err != nil {
		t.Fatal(err)
	}
	for name, call := range map[string]func(context.Context) error{"checkSchema": s.checkSchema, "Migrate": s.Migrate} {
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

// Migrating down past 00005 drops the log positions; up again, a follower
// starts from zero.
func TestMigrationLogPositions(t *testing.T) {
	t.Parallel()
	const before = 4 // the last version without log_positions
	s := newStore(t)
	ctx := t.Context()
	p := cdnapi.LogPosition{Stream: "edge", Path: "/var/log/nginx/access.log", Device: 1 << 63, Inode: 42, Offset: 10}
	if err := storetest.Writer(s).MoveLogPosition(ctx, cdnapi.LogPosition{}, p); err != nil {
		t.Fatalf("MoveLogPosition: %v", err)
	}
	provider := migrator(t, s)
	if _, err := provider.DownTo(ctx, before); err != nil {
		t.Fatalf("migrating down to version %d: %v", before, err)
	}
	if _, err := s.LogPositions(ctx); err == nil {
		t.Errorf("LogPositions at version %d succeeded", before)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate again: %v", err)
	}
	if got, err := s.LogPositions(ctx); err != nil || len(got) != 0 {
		t.Errorf("LogPositions after migrating down and up = %v, %v; want none", got, err)
	}
	if err := storetest.Writer(s).MoveLogPosition(ctx, cdnapi.LogPosition{}, p); err != nil {
		t.Errorf("MoveLogPosition from zero after migrating down and up: %v", err)
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

// errSchemaPending is returned by checkSchema when the database lacks
// migrations that this binary has; Migrate applies them.
var errSchemaPending = errors.New("postgres: database schema is older than this binary; run migrate")

// checkSchema returns nil when the database schema is exactly the one this
// binary knows, ErrSchemaNewer (wrapped) when it is newer, and
// errSchemaPending (wrapped) when migrations are due. It only reads, so it
// also works on a read-only role.
func (s *Store) checkSchema(ctx context.Context) error {
	db, binary, err := s.schemaVersion(ctx)
	if err != nil {
		return fmt.Errorf("postgres: check schema: %w", err)
	}
	switch {
	case db > binary:
		return schemaNewer(db, binary)
	case db < binary:
		return fmt.Errorf("%w (database at version %d, binary at %d)", errSchemaPending, db, binary)
	}
	return nil
}

// TestMigrationKeyScope writes a key into the schema before 00008, when
// keys had no scope, and migrates up: the key is read, as every key made
// before scopes. A key of scope upload then made migrates down and up
// again as read, the one scope a key without one can have.
func TestMigrationKeyScope(t *testing.T) {
	t.Parallel()
	const before = 7 // the last version without api_keys.scope
	s, provider := openAt(t, pgtest.NewSchema(t), before)
	ctx := t.Context()
	old := storetest.Key("old", "alpha", 0)
	if _, err := s.primary.Exec(ctx, `INSERT INTO api_keys (id, hash, project, label, created_at)
		VALUES ($1, $2, $3, '', $4)`, old.ID, old.Hash[:], old.Project, old.CreatedAt); err != nil {
		t.Fatalf("insert a key at version %d: %v", before, err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	scopes := func(when string, want ...cdnapi.KeyScope) {
		t.Helper()
		keys, err := s.APIKeys(ctx, "")
		if err != nil {
			t.Fatalf("%s: APIKeys: %v", when, err)
		}
		var got []cdnapi.KeyScope
		for _, k := range keys {
			got = append(got, k.Scope)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: scopes %q, want %q", when, got, want)
		}
	}
	scopes("after migrating up", cdnapi.ScopeRead)
	upload := storetest.Key("upload", "alpha", 1)
	upload.Scope = cdnapi.ScopeUpload
	if err := s.CreateKey(ctx, upload); err != nil {
		t.Fatalf("CreateKey: %v", err)
	}
	scopes("with an upload key", cdnapi.ScopeRead, cdnapi.ScopeUpload)
	if _, err := s.primary.Exec(ctx, `UPDATE api_keys SET scope = 'admin'`); err == nil {
		t.Error("the table took the scope admin")
	}
	if _, err := provider.DownTo(ctx, before); err != nil {
		t.Fatalf("migrating down to version %d: %v", before, err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate again: %v", err)
	}
	scopes("after migrating down and up", cdnapi.ScopeRead, cdnapi.ScopeRead)
}
