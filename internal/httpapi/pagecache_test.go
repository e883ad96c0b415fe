package httpapi

import (
	"bytes"
	"context"
	"github.com/prometheus/client_golang/prometheus"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/logbuf"
	"github.com/cdnapi/cdnapi/internal/storetest"
)

// newerFile returns a file of the default project newer than every fixture.
func newerFile(id string) cdnapi.File {
	return cdnapi.File{ID: id, Project: DefaultProject, CreatedAt: time.Now().UTC().Truncate(time.Second),
		Filename: "new.txt", Bytes: 1, Checksum: "sha256:" + string(bytes.Repeat([]byte("a"), 64))}
}

// TestPageKey checks that the page cache's key is the parsed request: equal
// for every spelling of one request, different for different pages.
func TestPageKey(t *testing.T) {
	e := newEnv(t, nil)
	cfg := Config{Store: e.store, Cursors: e.cursors}.withDefaults()
	_, body := e.get(t, onAPI, "/api/v1/files?limit=2")
	cursor := *decode[listBody](t, body).NextCursor
	_, body = e.get(t, onEdge, "/api/v1/assets?limit=2&region=FRA1")
	assetCursor := *decode[listBody](t, body).NextCursor
	key := func(parse parseList, target string, project string) string {
		t.Helper()
		r := httptest.NewRequest(http.MethodGet, target, nil)
		if project != "" {
			r = r.WithContext(withProject(r.Context(), project))
		}
		req, err := parse(r)
		must(t, err)
		return req.key
	}
	files, assets := filesRequest(cfg), assetsRequest(cfg)
	for _, tc := range []struct {
		parse        parseList
		a, b         string
		projA, projB string
		same         bool
	}{
		{files, "/api/v1/files", "/api/v1/files?limit=20", "", "", true},
		{files, "/api/v1/files?limit=5", "/api/v1/files?limit=005", "", "", true},
		{files, "/api/v1/files?limit=5&cursor=" + cursor, "/api/v1/files?cursor=" + cursor + "&limit=05", "", "", true},
		{files, "/api/v1/files?limit=5", "/api/v1/files?limit=6", "", "", false},
		{files, "/api/v1/files?limit=5", "/api/v1/files?limit=5&cursor=" + cursor, "", "", false},
		{files, "/api/v1/files", "/api/v1/files", "", DefaultProject, false}, // a key's answers are private
		{files, "/api/v1/files", "/api/v1/files", "one", "two", false},
		{assets, "/api/v1/assets?region=FRA1&limit=3", "/api/v1/assets?limit=3&region=FRA1", "", "", true},
		{assets, "/api/v1/assets?region=FRA1&cursor=" + assetCursor, "/api/v1/assets?cursor=" + assetCursor + "&region=FRA1&limit=020", "", "", true},
		{assets, "/api/v1/assets?region=FRA1", "/api/v1/assets", "", "", false},
	} {
		ka, kb := key(tc.parse, tc.a, tc.projA), key(tc.parse, tc.b, tc.projB)
		if (ka == kb) != tc.same {
			t.Errorf("%s (%q) and %s (%q): keys %q and %q, want same=%v", tc.a, tc.projA, tc.b, tc.projB, ka, kb, tc.same)
		}
	}
	if key(files, "/api/v1/files", "") == key(assets, "/api/v1/assets", "") {
		t.Error("files and assets share a key")
	}
}

func TestPageCache(t *testing.T) {
	e := newEnv(t, func(cfg *Config) { cfg.PageCacheTTL = time.Hour })
	ctx := context.Background()

	t.Run("a page read once is not kept", func(t *testing.T) {
		e.get(t, onAPI, "/api/v1/files?limit=4")
		must(t, storetest.Writer(e.store).PutFiles(ctx, []cdnapi.File{newerFile("fil_readonce")}))
		if _, again := e.get(t, onAPI, "/api/v1/files?limit=4"); !bytes.Contains(again, []byte("fil_readonce")) {
			t.Errorf("the second request of a page was not rendered again: %s", again)
		}
	})

	t.Run("a page is served again until it expires", func(t *testing.T) {
		e.get(t, onAPI, "/api/v1/files?limit=5") // its second miss puts it in (see doorkeeper)
		_, before := e.get(t, onAPI, "/api/v1/files?limit=5")
		must(t, storetest.Writer(e.store).PutFiles(ctx, []cdnapi.File{newerFile("fil_cachedaway")}))
		if _, again := e.get(t, onAPI, "/api/v1/files?limit=5"); !bytes.Equal(again, before) {
			t.Errorf("the second answer was rendered again:\n%s\nwant\n%s", again, before)
		}
		// Another URL is another entry, rendered from the store.
		if _, other := e.get(t, onAPI, "/api/v1/files?limit=6"); !bytes.Contains(other, []byte("fil_cachedaway")) {
			t.Errorf("limit=6 does not show the new file: %s", other)
		}
	})

	t.Run("every spelling of a request shares one entry", func(t *testing.T) {
		e.get(t, onAPI, "/api/v1/files?limit=009")
		_, before := e.get(t, onAPI, "/api/v1/files?limit=9") // the second miss of the page: kept
		must(t, storetest.Writer(e.store).PutFiles(ctx, []cdnapi.File{newerFile("fil_spelledaway")}))
		for _, target := range []string{"/api/v1/files?limit=09", "/api/v1/files?limit=009", "/api/v1/files?&limit=9&",
			"/api/v1/files?%6Cimit=9", "/api/v1/files?limit=%39"} {
			if _, again := e.get(t, onAPI, target); !bytes.Equal(again, before) {
				t.Errorf("%s was rendered again, not served from the entry of limit=9", target)
			}
		}
	})

	t.Run("gzip, 304 and HEAD from the cache", func(t *testing.T) {
		target := "/api/v1/assets?limit=100"
		res, plain := e.get(t, onEdge, target)
		gz, zipped := e.do(t, onEdge, http.MethodGet, target, hdr("Accept-Encoding", "gzip"))
		if gz.Header.Get("Content-Encoding") != "gzip" || bytes.Equal(zipped, plain) {
			t.Fatalf("cached page not gzip-coded: %v", gz.Header)
		}
		nm, body := e.do(t, onEdge, http.MethodGet, target, hdr("If-None-Match", res.Header.Get("ETag")))
		if nm.StatusCode != http.StatusNotModified || len(body) != 0 {
			t.Errorf("If-None-Match of the cached page: %d %q", nm.StatusCode, body)
		}
		head, body := e.do(t, onEdge, http.MethodHead, target, nil)
		if head.StatusCode != 200 || len(body) != 0 || head.Header.Get("ETag") != res.Header.Get("ETag") ||
			head.Header.Get("Link") != res.Header.Get("Link") {
			t.Errorf("HEAD of the cached page: %d %v", head.StatusCode, head.Header)
		}
	})

	t.Run("errors are not kept", func(t *testing.T) {
		target := "/api/v1/assets?region=ZZZ9"
		if res, _ := e.get(t, onEdge, target); res.StatusCode != http.StatusBadRequest {
			t.Fatalf("unknown region: %d", res.StatusCode)
		}
		must(t, storetest.Writer(e.store).PutRegions(ctx, []cdnapi.Region{{Code: "ZZZ9", Name: "Nowhere", Zone: "eu-west", Country: "DE", Status: cdnapi.StatusOperational}}))
		if res, body := e.get(t, onEdge, target); res.StatusCode != http.StatusOK {
			t.Errorf("after the region was added: %d %s", res.StatusCode, body)
		}
	})

	t.Run("concurrent misses share one answer", func(t *testing.T) {
		target := "/api/v1/files?limit=3"
		var wg sync.WaitGroup
		etags := make([]string, 16)
		for i := range etags {
			wg.Go(func() {
				res, _ := e.serve(t, onAPI, http.MethodGet, target, nil)
				etags[i] = res.Header.Get("ETag")
			})
		}
		wg.Wait()
		for _, tag := range etags {
			if tag == "" || tag != etags[0] {
				t.Fatalf("ETags of concurrent answers differ: %q", etags)
			}
		}
	})
}

// TestPageCacheExpires checks that a cached page gives way to the store's
// rows once its time is up.
func TestPageCacheExpires(t *testing.T) {
	e := newEnv(t, func(cfg *Config) { cfg.PageCacheTTL = 20 * time.Millisecond })
	e.get(t, onAPI, "/api/v1/files?limit=2")
	must(t, storetest.Writer(e.store).PutFiles(context.Background(), []cdnapi.File{newerFile("fil_fresh")}))
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, body := e.get(t, onAPI, "/api/v1/files?limit=2"); bytes.Contains(body, []byte("fil_fresh")) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the cached page never expired")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// BenchmarkHotPage compares a hot page of GET /api/v1/files?limit=20,
// served from the page cache and rendered anew, with the same bytes served
// as a static file by http.FileServer: the cache's aim is to come near the
// static file.
func BenchmarkHotPage(b *testing.B) {
	e := newEnv(b, nil)
	cfg := storeConfig(b, e.store)
	uncached := NewAPI(cfg)
	cfg.PageCacheTTL = time.Hour
	cached := NewAPI(cfg)
	// The access log as serve writes it: JSON lines into the buffered
	// writer, here over io.Discard, so its cost is the encoding and the copy.
	accessBuf := logbuf.New(io.Discard, 0, 0)
	defer accessBuf.Close()
	cfg.AccessLog = slog.New(slog.NewJSONHandler(accessBuf, nil))
	loggedSlog := NewAPI(cfg)
	cfg.AccessLog = slog.New(NewAccessLogHandler(accessBuf, slog.LevelInfo))
	logged := NewAPI(cfg)
	// And as serve wires it: the access log and the metrics.
	cfg.Metrics = NewMetrics(prometheus.NewRegistry())
	served := NewAPI(cfg)

	const target = "/api/v1/files?limit=20"
	rec := httptest.NewRecorder()
	uncached.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "files.json"), rec.Body.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	static := http.FileServer(http.Dir(dir))

	for _, bc := range []struct {
		name   string
		h      http.Handler
		target string
	}{
		{"static-file", static, "/files.json"},
		{"cached", cached, target},
		{"cached, access log", logged, target},
		{"cached, access log by slog.JSONHandler", loggedSlog, target},
		{"cached, access log, metrics", served, target},
		{"uncached", uncached, target},
	} {
		b.Run(bc.name, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, bc.target, nil)
			w := &discardWriter{header: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				clear(w.header)
				bc.h.ServeHTTP(w, req)
			}
			if w.status != http.StatusOK {
				b.Fatalf("status %d", w.status)
			}
		})
	}
	// Under concurrent requests, as a server sees them, what the requests
	// share (the cache's entry, the log's buffer, the counters) is contended:
	// ns/op is then wall time with every CPU busy, so CPU per answer is
	// GOMAXPROCS times it.
	b.Run("parallel, cached, access log, metrics", func(b *testing.B) {
		b.ReportAllocs()
		b.SetParallelism(16)
		b.RunParallel(func(pb *testing.PB) {
			req := httptest.NewRequest(http.MethodGet, target, nil)
			w := &discardWriter{header: http.Header{}}
			for pb.Next() {
				clear(w.header)
				served.ServeHTTP(w, req)
			}
		})
	})
}
