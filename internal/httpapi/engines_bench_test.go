package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/demo"
	"github.com/cdnapi/cdnapi/internal/pgtest"
	"github.com/cdnapi/cdnapi/internal/postgres"
	"github.com/cdnapi/cdnapi/internal/sqlite"
	"github.com/cdnapi/cdnapi/internal/storetest"
)

// TestMain stops the shared PostgreSQL cluster and removes the SQLite
// directory that BenchmarkEngines builds, if it ran; the tests use neither.
func TestMain(m *testing.M) {
	code := pgtest.Main(m)
	if engineData.sqliteDir != "" {
		os.RemoveAll(engineData.sqliteDir)
	}
	os.Exit(code)
}

// engineStore is what BenchmarkEngines needs of a store: the API's Store,
// and its schema brought up to date.
type engineStore interface {
	cdnapi.Store
	Migrate(ctx context.Context) error
}

// engineDB is the data of one engine for BenchmarkEngines, built once per
// test binary (also under -count, which calls the benchmark again): seeding
// a million files takes far longer than measuring them.
type engineDB struct {
	once  sync.Once
	open  func(ctx context.Context) (engineStore, error) // a new store on the data
	deep  cdnapi.Position                                // the row 90% of the way down the list
	page2 cdnapi.Position                                // the 20th row: page 2 continues after it
	err   error
}

var engineData struct {
	sqlite, postgres engineDB
	sqliteDir        string // removed by TestMain
}

// BenchmarkEngines measures GET /api/v1/files?limit=20 through the whole
// API handler (middleware, query parsing, the store, encoding and the ETag),
// on SQLite and on PostgreSQL holding the same files: the first page, the
// second, and the page after the row 90% of the way down the list. With
// CDNAPI_BENCH_FILES=1000000 these are the figures of a page 900,000 rows
// deep in a million files, both engines in one run. It reports the median
// and 99th percentile latency of one request beside the mean.
//
// PostgreSQL is the shared throwaway cluster of pgtest, on loopback TCP,
// with fsync off; reads do not notice. Without PostgreSQL its half skips,
// or fails when CI=true.
func BenchmarkEngines(b *testing.B) {
	n := benchFiles(b)
	depth := n / 10 * 9
	engines := []struct {
		name  string
		db    *engineDB
		build func(b *testing.B, db *engineDB) // sets db.open, or db.err
	}{
		{"sqlite", &engineData.sqlite, buildSQLite},
		{"postgres", &engineData.postgres, buildPostgres},
	}
	for _, e := range engines {
		b.Run(e.name, func(b *testing.B) {
			if e.name == "postgres" {
				// Outside the Once: Shared may skip b, which would leave
				// the Once done with nothing built.
				pgtest.Shared(b)
			}
			e.db.once.Do(func() {
				if e.build(b, e.db); e.db.err == nil {
					e.db.deep, e.db.err = walkTo(e.db, depth)
				}
				if e.db.err == nil {
					e.db.page2, e.db.err = walkTo(e.db, 20)
				}
			})
			if e.db.err != nil {
				b.Fatalf("building the %s data: %v", e.name, e.db.err)
			}
			h, cursors := engineAPI(b, e.db)
			deep := cursors.Encode(cdnapi.CursorFiles, DefaultProject, e.db.deep)
			page2 := cursors.Encode(cdnapi.CursorFiles, DefaultProject, e.db.page2)
			for _, page := range []struct{ name, target string }{
				{"page1", "/api/v1/files?limit=20"},
				// Page 2 is the shallowest page with a cursor: set beside
				// the deep page, it shows what depth costs, apart from
				// what a cursor costs.
				{"page2", "/api/v1/files?limit=20&cursor=" + page2},
				{"deep", "/api/v1/files?limit=20&cursor=" + deep},
			} {
				b.Run(page.name, func(b *testing.B) { measurePage(b, h, page.target) })
			}
		})
	}
}

// measurePage checks that target answers a full page, then requests it
// b.N times, reporting the median and 99th percentile of one request.
func measurePage(b *testing.B, h http.Handler, target string) {
	req := httptest.NewRequest(http.MethodGet, target, nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var body struct {
		Data    []json.RawMessage `json:"data"`
		HasMore bool              `json:"has_more"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); rec.Code != http.StatusOK || err != nil ||
		len(body.Data) != 20 || !body.HasMore {
		b.Fatalf("GET %s = %d, %d files, has_more %v", target, rec.Code, len(body.Data), body.HasMore)
	}

	w := &discardWriter{header: http.Header{}}
	var took []time.Duration
	b.ReportAllocs()
	for b.Loop() {
		clear(w.header)
		t0 := time.Now()
		h.ServeHTTP(w, req)
		took = append(took, time.Since(t0))
	}
	if w.status != http.StatusOK {
		b.Fatalf("GET %s = %d", target, w.status)
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(took[len(took)*99/100].Nanoseconds()), "p99-ns")
}

// engineAPI opens a store on db's data for the length of b and returns the
// API handler over it, with the codec of the store's cursor secret.
func engineAPI(b *testing.B, db *engineDB) (http.Handler, *cdnapi.CursorCodec) {
	ctx := b.Context()
	store, err := db.open(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	cfg := storeConfig(b, store)
	return NewAPI(cfg), cfg.Cursors
}

// seedEngine writes benchFiles files into st: the same files on every
// engine, as demo.Seed is deterministic for a seed and reference time.
func seedEngine(b *testing.B, name string, st engineStore) error {
	ctx := context.Background()
	if err := st.Migrate(ctx); err != nil {
		return err
	}
	n := benchFiles(b)
	start := time.Now()
	err := demo.Seed(ctx, storetest.Writer(st), demo.SeedOptions{Project: DefaultProject, Files: n, Seed: 1,
		Now: time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)})
	if err != nil {
		return err
	}
	b.Logf("%s: seeded %d files in %v", name, n, time.Since(start).Round(time.Millisecond))
	return nil
}

// buildSQLite seeds a SQLite file in a directory of its own, which outlives
// b so that later runs reuse it.
func buildSQLite(b *testing.B, db *engineDB) {
	dir, err := os.MkdirTemp("", "cdnapi-engines-")
	if err != nil {
		db.err = err
		return
	}
	engineData.sqliteDir = dir
	path := filepath.Join(dir, "bench.db")
	db.open = func(ctx context.Context) (engineStore, error) { return sqlite.Open(ctx, path, sqlite.Options{}) }
	st, err := db.open(context.Background())
	if err != nil {
		db.err = err
		return
	}
	defer st.Close()
	db.err = seedEngine(b, "sqlite", st)
}

// buildPostgres seeds a database of the shared cluster that is not dropped
// when b ends, so that later runs reuse it; it goes with the cluster.
func buildPostgres(b *testing.B, db *engineDB) {
	ctx := context.Background()
	c := pgtest.Shared(b)
	admin, err := pgx.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		db.err = err
		return
	}
	defer admin.Close(ctx)
	if _, db.err = admin.Exec(ctx, `CREATE DATABASE bench_engines`); db.err != nil {
		return
	}
	dsn := c.DSN("bench_engines")
	db.open = func(ctx context.Context) (engineStore, error) { return postgres.Open(ctx, dsn, postgres.Options{}) }
	st, err := db.open(ctx)
	if err != nil {
		db.err = err
		return
	}
	defer st.Close()
	if db.err = seedEngine(b, "postgres", st); db.err != nil {
		return
	}
	// Measure the table as autovacuum would soon leave it, statistics and
	// visibility map up to date, rather than at whichever point of its
	// first pass the run happens to fall.
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		db.err = err
		return
	}
	defer conn.Close(ctx)
	_, db.err = conn.Exec(ctx, `VACUUM (ANALYZE) files`)
}

// walkTo returns the position of the row depth rows down the list of files,
// found as a client would find it: by paging.
func walkTo(db *engineDB, depth int) (cdnapi.Position, error) {
	ctx := context.Background()
	st, err := db.open(ctx)
	if err != nil {
		return cdnapi.Position{}, err
	}
	defer st.Close()
	var after *cdnapi.Position
	for walked := 0; walked < depth; {
		page, err := st.ListFiles(ctx, cdnapi.FileQuery{Project: DefaultProject, After: after, Limit: min(10_000, depth-walked)})
		if err != nil {
			return cdnapi.Position{}, err
		}
		if len(page) == 0 {
			return cdnapi.Position{}, fmt.Errorf("the list ends after %d files, before %d", walked, depth)
		}
		walked += len(page)
		last := page[len(page)-1]
		after = &cdnapi.Position{CreatedAt: last.CreatedAt, ID: last.ID}
	}
	return *after, nil
}
