package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/storetest"
)

// openTemp opens a fresh, migrated store on a file in a temporary directory
// and closes it when t ends.
func openTemp(t testing.TB, opts Options) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cdnapi.db")
	s, err := Open(t.Context(), path, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Migrate(t.Context()); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return s, path
}

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) cdnapi.Store {
		s, _ := openTemp(t, Options{})
		return s
	})
}

func TestKeyStore(t *testing.T) {
	storetest.RunKeys(t, func(t *testing.T) cdnapi.KeyStore {
		s, _ := openTemp(t, Options{})
		return s
	})
}

// pragma reads one pragma on a connection of db.
func pragma(t *testing.T, db *sql.DB, name string) string {
	t.Helper()
	var v string
	if err := db.QueryRowContext(t.Context(), "PRAGMA "+name).Scan(&v); err != nil {
		t.Fatalf("PRAGMA %s: %v", name, err)
	}
	return v
}

func TestPragmas(t *testing.T) {
	s, _ := openTemp(t, Options{ReadConns: 3, BusyTimeout: 1234 * time.Millisecond, WriterCacheKiB: 777})
	tests := []struct {
		pool, name, want string
	}{
		{"write", "journal_mode", "wal"},
		{"write", "cache_size", "-777"},
		{"write", "busy_timeout", "100"}, // one try of waitWrite
		{"write", "synchronous", "1"},    // NORMAL
		{"write", "foreign_keys", "1"},
		{"write", "temp_store", "2"}, // MEMORY
		{"write", "query_only", "0"},
		{"read", "journal_mode", "wal"},
		{"read", "busy_timeout", "1234"},
		{"read", "foreign_keys", "1"},
		{"read", "query_only", "1"},
		{"read", "cache_size", fmt.Sprint(-readerCacheKiB)},
	}
	for _, tt := range tests {
		db := s.write
		if tt.pool == "read" {
			db = s.read
		}
		if got := pragma(t, db, tt.name); got != tt.want {
			t.Errorf("%s pool: PRAGMA %s = %s, want %s", tt.pool, tt.name, got, tt.want)
		}
	}
	if got := s.read.Stats().MaxOpenConnections; got != 3 {
		t.Errorf("read pool holds up to %d connections, want 3", got)
	}
	if got := s.write.Stats().MaxOpenConnections; got != 1 {
		t.Errorf("write pool holds up to %d connections, want 1", got)
	}
	// The read pool must refuse writes.
	if _, err := s.read.ExecContext(t.Context(), `DELETE FROM regions`); err == nil {
		t.Error("a write on the read pool succeeded")
	}
}

func TestDefaultOptions(t *testing.T) {
	s, _ := openTemp(t, Options{})
	if got := pragma(t, s.read, "busy_timeout"); got != "5000" {
		t.Errorf("default busy_timeout = %s, want 5000", got)
	}
	// serve's writer must not keep a bulk writer's cache (see
	// DefaultWriterCacheKiB).
	if got, want := pragma(t, s.write, "cache_size"), fmt.Sprint(-DefaultWriterCacheKiB); got != want {
		t.Errorf("default writer cache_size = %s, want %s", got, want)
	}
	if got := s.read.Stats().MaxOpenConnections; got < defaultMinReadConns {
		t.Errorf("default read pool = %d connections, want at least %d", got, defaultMinReadConns)
	}
}

func TestOpenRefusesPaths(t *testing.T) {
	dir := t.TempDir()
	notADatabase := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notADatabase, []byte("this is not a database, just a long enough text file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{
		notADatabase,
		"",
		":memory:",
		"file:x.db",
		filepath.Join(dir, "a?b.db"),
		filepath.Join(dir, "missing", "dir", "cdnapi.db"),
	} {
		if s, err := Open(t.Context(), path, Options{}); err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded", path)
		}
	}
}

func TestOpenCreatesFileAndReopenKeepsData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new.db")
	s, err := Open(t.Context(), path, Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("Open did not create the file: %v", err)
	}
	if err := s.Migrate(t.Context()); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	files := storetest.Files(30, "default", 1)
	if err := storetest.Writer(s).PutFiles(t.Context(), files); err != nil {
		t.Fatalf("PutFiles: %v", err)
	}
	secret, err := s.CursorSecret(t.Context())
	if err != nil {
		t.Fatalf("CursorSecret: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	s, err = Open(t.Context(), path, Options{})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	if err := s.checkSchema(t.Context()); err != nil {
		t.Fatalf("checkSchema after reopening: %v", err)
	}
	got, err := s.ListFiles(t.Context(), cdnapi.FileQuery{Project: "default", Limit: 100})
	if err != nil || len(got) != len(files) {
		t.Fatalf("after reopening, ListFiles = %d files, %v; want %d", len(got), err, len(files))
	}
	again, err := s.CursorSecret(t.Context())
	if err != nil || string(again) != string(secret) {
		t.Errorf("after reopening, the cursor secret changed")
	}
}

func TestMigrations(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.db")
	s, err := Open(t.Context(), path, Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()

	if err := s.checkSchema(t.Context()); !errors.Is(err, errSchemaPending) {
		t.Errorf("checkSchema on a new database = %v, want errSchemaPending", err)
	}
	for i := range 3 { // idempotent
		if err := s.Migrate(t.Context()); err != nil {
			t.Fatalf("Migrate #%d: %v", i+1, err)
		}
	}
	db, binary, err := s.schemaVersion(t.Context())
	if err != nil || db != binary || binary < 1 {
		t.Fatalf("schemaVersion = %d, %d, %v; want equal and at least 1", db, binary, err)
	}
	if err := s.checkSchema(t.Context()); err != nil {
		t.Errorf("checkSchema after Migrate: %v", err)
	}

	// A newer release has migrated the database further.
	if _, err := s.write.ExecContext(t.Context(),
		`INSERT INTO goose_db_version (version_id, is_applied) VALUES (?, 1)`, binary+1); err != nil {
		t.Fatalf("recording a newer migration: %v", err)
	}
	if err := s.checkSchema(t.Context()); !errors.Is(err, ErrSchemaNewer) {
		t.Errorf("checkSchema on a newer database = %v, want ErrSchemaNewer", err)
	}
	if err := s.Migrate(t.Context()); !errors.Is(err, ErrSchemaNewer) {
		t.Errorf("Migrate on a newer database = %v, want ErrSchemaNewer", err)
	}
}

// TestQueryPlans checks that every list query, and the delete of retention,
// is a range scan of an index in the order it needs: no sort (a temporary
// b-tree), no full-table scan. It checks
// the plans SQLite makes without statistics, as on a database nobody has
// analyzed, and with them, as after ANALYZE or PRAGMA optimize.
func TestQueryPlans(t *testing.T) {
	s, _ := openTemp(t, Options{})
	putPlanData(t, s)
	after := []any{int64(1), "fil_x"}
	tests := []struct {
		name  string
		query string
		args  []any
		want  string // a part of the plan
	}{
		{"files first", listFilesFirst, []any{"default", 20}, "SEARCH files USING PRIMARY KEY (project=?)"},
		{"files after", listFilesAfter, append(append([]any{"default"}, after...), 20), "SEARCH files USING PRIMARY KEY (project=? AND (created_at,id)<(?,?))"},
		{"assets first", listAssetsFirst, []any{20}, "SCAN assets"},
		{"assets after", listAssetsAfter, append(after, 20), "SEARCH assets USING PRIMARY KEY ((created_at,id)<(?,?))"},
		{"region assets first", listRegionAssetsFirst, []any{"FRA1", 20}, "SEARCH assets USING INDEX assets_by_region_created (region=?)"},
		{"region assets after", listRegionAssetsAfter, append(append([]any{"FRA1"}, after...), 20), "SEARCH assets USING INDEX assets_by_region_created (region=? AND (created_at,id)<(?,?))"},
		{"regions", listRegions, nil, "SCAN regions"},     // the primary key, in order
		{"probe files", probeFiles, nil, "SCAN files"},    // the primary key, backwards, stopping at 1
		{"probe assets", probeAssets, nil, "SCAN assets"}, // the primary key, backwards, stopping at 1
		{"probe regions", probeRegions, nil, "SCAN regions"},
		{"delete assets: the oldest", deleteAssetsBefore, []any{int64(1), 10}, "SEARCH assets USING PRIMARY KEY (created_at<?)"},
		{"delete assets: by key", deleteAssetsBefore, []any{int64(1), 10}, "SEARCH assets USING PRIMARY KEY (created_at=? AND id=?)"},
		{"log position", selectLogPositions + ` WHERE stream = ?`, []any{"edge"}, "SEARCH log_positions USING PRIMARY KEY (stream=?)"},
		{"log positions", selectLogPositions + ` ORDER BY stream`, nil, "SCAN log_positions"}, // the primary key, in order
	}
	for _, stats := range []string{"without statistics", "analyzed"} {
		if stats == "analyzed" {
			if _, err := s.write.ExecContext(t.Context(), `ANALYZE`); err != nil {
				t.Fatal(err)
			}
		}
		for _, tt := range tests {
			t.Run(stats+"/"+tt.name, func(t *testing.T) {
				plan := explain(t, s.read, tt.query, tt.args...)
				if !strings.Contains(plan, tt.want) {
					t.Errorf("plan:\n%s\nwant it to contain %q", plan, tt.want)
				}
				if strings.Contains(plan, "TEMP B-TREE") {
					t.Errorf("plan sorts:\n%s", plan)
				}
			})
		}
	}
}

// putPlanData writes a few thousand rows, in several projects and regions.
func putPlanData(t *testing.T, s *Store) {
	t.Helper()
	ctx := t.Context()
	regions := storetest.Regions()
	if err := storetest.Writer(s).PutRegions(ctx, regions); err != nil {
		t.Fatal(err)
	}
	for i, project := range []string{"default", "other", "third"} {
		if err := storetest.Writer(s).PutFiles(ctx, storetest.Files(2000, project, uint64(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := storetest.Writer(s).PutAssets(ctx, storetest.Assets(3000, storetest.RegionCodes(regions), 9)); err != nil {
		t.Fatal(err)
	}
}

// explain returns the EXPLAIN QUERY PLAN of query, one step per line.
func explain(t *testing.T, db *sql.DB, query string, args ...any) string {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		t.Fatalf("EXPLAIN QUERY PLAN: %v", err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		b.WriteString(detail + "\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestWritersQueue runs writes from many goroutines at once: the single
// writer connection queues them, so none fails with "database is locked".
func TestWritersQueue(t *testing.T) {
	s, _ := openTemp(t, Options{})
	errs := make(chan error, 16)
	for i := range 16 {
		go func() {
			errs <- storetest.Writer(s).PutFiles(context.Background(), storetest.Files(50, "default", uint64(100+i)))
		}()
	}
	for range 16 {
		if err := <-errs; err != nil {
			t.Errorf("PutFiles: %v", err)
		}
	}
	got, err := s.ListFiles(t.Context(), cdnapi.FileQuery{Project: "default", Limit: 1000})
	if err != nil || len(got) != 800 {
		t.Errorf("ListFiles = %d files, %v; want 800", len(got), err)
	}
}

// TestTwoStoresShareSecret opens the same file twice, as two replicas
// would, and asks both for the cursor secret at once.
func TestTwoStoresShareSecret(t *testing.T) {
	a, path := openTemp(t, Options{})
	b, err := Open(t.Context(), path, Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer b.Close()
	type result struct {
		secret []byte
		err    error
	}
	ch := make(chan result, 2)
	for _, s := range []*Store{a, b} {
		go func() {
			secret, err := s.CursorSecret(context.Background())
			ch <- result{secret, err}
		}()
	}
	r1, r2 := <-ch, <-ch
	if r1.err != nil || r2.err != nil {
		t.Fatalf("CursorSecret: %v, %v", r1.err, r2.err)
	}
	if string(r1.secret) != string(r2.secret) {
		t.Errorf("two stores on one file disagree on the cursor secret")
	}
}

func TestPingRespectsContext(t *testing.T) {
	s, _ := openTemp(t, Options{})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := s.Ping(ctx); err == nil {
		t.Error("Ping with a cancelled context succeeded")
	}
	if err := s.Ping(t.Context()); err != nil {
		t.Errorf("Ping: %v", err)
	}
}

// TestMigrationKeepsAssets writes assets into the first schema, migrates
// up, down and up again, and reads the same assets after each step.
func TestMigrationKeepsAssets(t *testing.T) {
	assets := storetest.Assets(500, storetest.RegionCodes(storetest.Regions()), 61)
	sorted := slices.Clone(assets)
	storetest.SortAssets(sorted)
	migrationRoundTrip(t, 1, func(s *Store) error {
		return storetest.Writer(s).PutAssets(t.Context(), assets)
	}, func(s *Store, when string) {
		t.Helper()
		var got []cdnapi.Asset
		var after *cdnapi.Position
		for {
			page, err := s.ListAssets(t.Context(), cdnapi.AssetQuery{After: after, Limit: 100})
			if err != nil {
				t.Fatalf("%s: ListAssets: %v", when, err)
			}
			got = append(got, page...)
			if len(page) < 100 {
				break
			}
			p := page[len(page)-1].Position()
			after = &p
		}
		if len(got) != len(sorted) {
			t.Fatalf("%s: %d assets, want %d", when, len(got), len(sorted))
		}
		for i := range got {
			if got[i] != sorted[i] {
				t.Fatalf("%s: asset %d = %+v, want %+v", when, i, got[i], sorted[i])
			}
		}
	})
}
