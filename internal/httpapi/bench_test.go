package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/api"
	"github.com/cdnapi/cdnapi/internal/demo"
	"github.com/cdnapi/cdnapi/internal/health"
	"github.com/cdnapi/cdnapi/internal/sqlite"
)

// benchFiles is the number of files BenchmarkFilesPage seeds: 100,000 by
// default, so that the benchmark starts quickly, or CDNAPI_BENCH_FILES,
// e.g. 1000000 for the figures of the README.
func benchFiles(b *testing.B) int {
	if s := os.Getenv("CDNAPI_BENCH_FILES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1000 {
			b.Fatalf("CDNAPI_BENCH_FILES=%q: want a number of at least 1000", s)
		}
		return n
	}
	return 100_000
}

// BenchmarkFilesPage measures GET /api/v1/files?limit=20 through the whole
// API handler (middleware, query parsing, a real SQLite store, encoding and
// the ETag), at the first page and at a page half-way down the list. It
// reports the median and 99th percentile latency beside the mean.
func BenchmarkFilesPage(b *testing.B) {
	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "bench.db"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	n := benchFiles(b)
	start := time.Now()
	err = demo.Seed(ctx, store, demo.SeedOptions{Project: DefaultProject, Files: n, Seed: 1,
		Now: time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("seeded %d files in %v", n, time.Since(start).Round(time.Millisecond))

	secret, err := store.CursorSecret(ctx)
	if err != nil {
		b.Fatal(err)
	}
	cursors, err := cdnapi.NewCursorCodec(secret)
	if err != nil {
		b.Fatal(err)
	}
	status := health.New(store, health.Config{})
	h := NewAPI(Config{Store: store, Cursors: cursors, Status: status, OpenAPI: api.JSON()})

	// The deep page continues after the row half-way down the list.
	var mid *cdnapi.Position
	for seen := 0; seen < n/2; {
		page, err := store.ListFiles(ctx, cdnapi.FileQuery{Project: DefaultProject, After: mid, Limit: min(1000, n/2-seen)})
		if err != nil || len(page) == 0 {
			b.Fatalf("walking to the middle: %v", err)
		}
		last := page[len(page)-1]
		mid = &cdnapi.Position{CreatedAt: last.CreatedAt, ID: last.ID}
		seen += len(page)
	}
	deep := cursors.Encode(cdnapi.ListFiles, DefaultProject, *mid)

	for _, bc := range []struct{ name, target string }{
		{"page=1", "/api/v1/files?limit=20"},
		{"page=deep", "/api/v1/files?limit=20&cursor=" + deep},
	} {
		b.Run(bc.name, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, bc.target, nil)
			w := &discardWriter{header: http.Header{}}
			h.ServeHTTP(w, req)
			if w.status != http.StatusOK {
				b.Fatalf("status %d", w.status)
			}
			var took []time.Duration
			b.ReportAllocs()
			for b.Loop() {
				clear(w.header)
				t0 := time.Now()
				h.ServeHTTP(w, req)
				took = append(took, time.Since(t0))
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Nanoseconds()), "p50-ns")
			b.ReportMetric(float64(took[len(took)*99/100].Nanoseconds()), "p99-ns")
		})
	}
}

// discardWriter is a ResponseWriter that keeps only the status, so that the
// benchmark measures the handler rather than a recorder.
type discardWriter struct {
	header http.Header
	status int
}

func (w *discardWriter) Header() http.Header         { return w.header }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(status int)      { w.status = status }
