package httpapi

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/klauspost/compress/zstd"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/api"
	"github.com/cdnapi/cdnapi/internal/auth"
	"github.com/cdnapi/cdnapi/internal/edgelog"
	"github.com/cdnapi/cdnapi/internal/ratelimit"
	"github.com/cdnapi/cdnapi/internal/sqlite"
	"github.com/cdnapi/cdnapi/internal/storetest"
	"github.com/cdnapi/cdnapi/internal/teststore"
)

// The tests of this file run the ingest listener's handler with the real
// verifier of internal/auth over keys in a SQLite store, and the real
// receiver of internal/edgelog writing into it.

// ingestEnv is an ingest handler over a SQLite store with regions FRA1 and
// SIN1, and a key of each kind.
type ingestEnv struct {
	h                       http.Handler
	st                      cdnapi.Store
	fra, read, upload, none string // edge keys of FRA1 and of no region; a read and an upload key
}

func newIngestEnv(t *testing.T, cfg IngestConfig, wrap func(cdnapi.Store) edgelog.Store) *ingestEnv {
	t.Helper()
	return newIngestEnvOn(t, teststore.SQLite(t), cfg, wrap)
}

// newIngestEnvOn is newIngestEnv over st, a migrated store.
func newIngestEnvOn(t *testing.T, st *sqlite.Store, cfg IngestConfig, wrap func(cdnapi.Store) edgelog.Store) *ingestEnv {
	t.Helper()
	if err := storetest.Writer(st).PutRegions(t.Context(), []cdnapi.Region{
		{Code: "FRA1", Name: "Frankfurt", Zone: "eu-central", Country: "DE", Status: cdnapi.StatusOperational},
		{Code: "SIN1", Name: "Singapore", Zone: "ap-southeast", Country: "SG", Status: cdnapi.StatusOperational},
	}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	mk := func(scope cdnapi.KeyScope, region string) string {
		key, rec := auth.NewKey("alpha", scope, "", now, time.Time{})
		rec.Region = region
		if err := st.CreateKey(t.Context(), rec); err != nil {
			t.Fatal(err)
		}
		return key
	}
	e := &ingestEnv{st: st, fra: mk(cdnapi.ScopeEdge, "FRA1"), none: mk(cdnapi.ScopeEdge, ""),
		read: mk(cdnapi.ScopeRead, ""), upload: mk(cdnapi.ScopeUpload, "")}
	v := auth.New(st, auth.Config{})
	if err := v.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	var rst edgelog.Store = st
	if wrap != nil {
		rst = wrap(st)
	}
	cfg.Keys, cfg.Receiver = v, edgelog.New(rst, edgelog.Config{})
	cfg.OpenAPI = api.IngestJSON()
	e.h = NewIngest(cfg)
	return e
}

// edgeLogLine is request i of region, a GET answered 200.
func edgeLogLine(i int, region string) string {
	return fmt.Sprintf(`{"request_id":"%032x","msec":%d.%03d,"region":"%s","request_method":"GET","uri":"/f/%d","status":200,"body_bytes_sent":%d,"upstream_cache_status":"MISS"}`,
		i, time.Now().Unix(), i%1000, region, i, i)
}

func (e *ingestEnv) post(t *testing.T, key, encoding string, body []byte, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, EdgeLogsPath, bytes.NewReader(body))
	if key != "" {
		r.Header.Set("Authorization", "Bearer "+key)
	}
	if encoding != "" {
		r.Header.Set("Content-Encoding", encoding)
	}
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Add(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, r)
	return w
}

func gzipped(t *testing.T, b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func zstded(t *testing.T, b []byte) []byte {
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	return enc.EncodeAll(b, nil)
}

// batchAnswer is the 200 body of a batch.
type batchAnswer struct {
	Object                          string
	Lines, Taken, Skipped, Rejected int
	RejectedOtherRegion             int `json:"rejected_other_region"`
	FirstRejection                  *struct {
		Line   int
		Reason string
	} `json:"first_rejection"`
}

func TestIngestEdgeLogs(t *testing.T) {
	e := newIngestEnv(t, IngestConfig{MaxBatchBytes: 64 << 10}, nil)
	ndjson := []byte(edgeLogLine(1, "FRA1") + "\n" + edgeLogLine(2, "SIN1") + "\n" + edgeLogLine(3, "FRA1") + "\n")
	huge := bytes.Repeat([]byte(edgeLogLine(9, "FRA1")+"\n"), 2000) // 400 KiB, 2 KiB gzipped
	for _, tt := range []struct {
		name, key, encoding string
		body                []byte
		header              []string
		status              int
		code                string
	}{
		{"no key", "", "", ndjson, nil, 401, cdnapi.CodeAuthenticationRequired},
		{"unknown key", "cdk_" + strings.Repeat("A", 32), "", ndjson, nil, 401, cdnapi.CodeAPIKeyInvalid},
		{"read key", e.read, "", ndjson, nil, 403, cdnapi.CodePermissionDenied},
		{"upload key", e.upload, "", ndjson, nil, 403, cdnapi.CodePermissionDenied},
		{"edge key of no region", e.none, "", ndjson, nil, 403, cdnapi.CodePermissionDenied},
		{"two keys", e.fra, "", ndjson, []string{"Authorization", "Bearer " + e.fra}, 400, cdnapi.CodeParameterInvalid},
		{"ndjson", e.fra, "", ndjson, nil, 200, ""},
		{"gzip", e.fra, "gzip", gzipped(t, ndjson), nil, 200, ""},
		{"zstd", e.fra, "zstd", zstded(t, ndjson), nil, 200, ""},
		{"broken gzip", e.fra, "gzip", ndjson, nil, 400, cdnapi.CodeParameterInvalid},
		{"brotli", e.fra, "br", ndjson, nil, 415, cdnapi.CodeEncodingUnsupported},
		{"too large as sent", e.fra, "", huge, nil, 413, cdnapi.CodeBodyTooLarge},
		{"too large decoded, gzip", e.fra, "gzip", gzipped(t, huge), nil, 413, cdnapi.CodeBodyTooLarge},
		{"too large decoded, zstd", e.fra, "zstd", zstded(t, huge), nil, 413, cdnapi.CodeBodyTooLarge},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := e.post(t, tt.key, tt.encoding, tt.body, tt.header...)
			if w.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.status, w.Body)
			}
			if tt.code != "" {
				var body struct{ Error struct{ Code string } }
				if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || body.Error.Code != tt.code {
					t.Errorf("body %s, want code %s", w.Body, tt.code)
				}
				if tt.status == 401 && w.Header().Get("WWW-Authenticate") == "" {
					t.Error("401 without WWW-Authenticate")
				}
				return
			}
			var a batchAnswer
			if err := json.Unmarshal(w.Body.Bytes(), &a); err != nil {
				t.Fatal(err)
			}
			var doc any
			json.Unmarshal(w.Body.Bytes(), &doc)
			if err := batchSchema(t).VisitJSON(doc); err != nil {
				t.Errorf("the answer does not match BatchResult of api/ingest.yaml: %v", err)
			}
			if a.Object != "edge_log_batch" || a.Lines != 3 || a.Taken != 2 || a.Rejected != 1 || a.RejectedOtherRegion != 1 ||
				a.FirstRejection == nil || a.FirstRejection.Line != 2 || !strings.Contains(a.FirstRejection.Reason, "SIN1") {
				t.Errorf("answer %s", w.Body)
			}
			if cc := w.Header().Get("Cache-Control"); cc != "no-store" {
				t.Errorf("Cache-Control %q", cc)
			}
		})
	}
	// Three batches of the same lines are two rows, and SIN1's line none.
	page, err := e.st.ListAssets(t.Context(), cdnapi.AssetQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(page) != 2 || page[0].Region != "FRA1" || page[1].Region != "FRA1" {
		t.Errorf("assets %+v, want requests 1 and 3 of FRA1", page)
	}

	r := httptest.NewRequest(http.MethodGet, EdgeLogsPath, nil)
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, r)
	if w.Code != 405 || w.Header().Get("Allow") != "POST" {
		t.Errorf("GET: %d, Allow %q", w.Code, w.Header().Get("Allow"))
	}
	r = httptest.NewRequest(http.MethodGet, "/api/v1/openapi.json", nil)
	w = httptest.NewRecorder()
	e.h.ServeHTTP(w, r)
	if w.Code != 200 || !bytes.Equal(w.Body.Bytes(), api.IngestJSON()) {
		t.Errorf("the document: %d", w.Code)
	}
	r = httptest.NewRequest(http.MethodPost, "/api/v1/assets", nil)
	w = httptest.NewRecorder()
	e.h.ServeHTTP(w, r)
	if w.Code != 404 || !strings.Contains(w.Body.String(), EdgeLogsPath) {
		t.Errorf("another path: %d %s", w.Code, w.Body)
	}
}

// batchSchema returns BatchResult of the ingest address's document, as
// the listener serves it.
func batchSchema(t *testing.T) *openapi3.Schema {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(api.IngestJSON())
	if err != nil {
		t.Fatal(err)
	}
	return doc.Components.Schemas["BatchResult"].Value
}

// downStore is a store that does not answer writes, until up.
type downStore struct {
	cdnapi.Store
	up bool
}

func (d *downStore) Write(ctx context.Context, fn func(w cdnapi.Writer) error) error {
	if !d.up {
		return errors.New("dial tcp 10.0.0.1:5432: connection refused")
	}
	return d.Store.Write(ctx, fn)
}

// TestIngestStoreDown: a batch the store cannot commit gets 503 with
// Retry-After and leaves nothing; sent again once the store is back, it
// is all there.
func TestIngestStoreDown(t *testing.T) {
	var down *downStore
	e := newIngestEnv(t, IngestConfig{}, func(st cdnapi.Store) edgelog.Store {
		down = &downStore{Store: st}
		return down
	})
	body := []byte(edgeLogLine(1, "FRA1") + "\n" + edgeLogLine(2, "FRA1") + "\n")
	w := e.post(t, e.fra, "", body)
	if w.Code != 503 || w.Header().Get("Retry-After") == "" || !strings.Contains(w.Body.String(), cdnapi.CodeStorageUnavailable) ||
		strings.Contains(w.Body.String(), "10.0.0.1") {
		t.Fatalf("store down: %d, Retry-After %q, %s", w.Code, w.Header().Get("Retry-After"), w.Body)
	}
	if page, _ := e.st.ListAssets(t.Context(), cdnapi.AssetQuery{Limit: 10}); len(page) != 0 {
		t.Fatalf("%d assets written while the store was down", len(page))
	}
	down.up = true
	if w := e.post(t, e.fra, "", body); w.Code != 200 {
		t.Fatalf("store back: %d %s", w.Code, w.Body)
	}
	if page, _ := e.st.ListAssets(t.Context(), cdnapi.AssetQuery{Limit: 10}); len(page) != 2 {
		t.Fatalf("%d assets once the store is back, want 2", len(page))
	}
}

// TestIngestRateLimit: a key's batches beyond its bucket get 429 with
// Retry-After; another key's bucket is its own.
func TestIngestRateLimit(t *testing.T) {
	e := newIngestEnv(t, IngestConfig{Limiter: ratelimit.NewMemory(ratelimit.Policy{Rate: 1, Burst: 2})}, nil)
	body := []byte(edgeLogLine(1, "FRA1") + "\n")
	for i, want := range []int{200, 200, 429} {
		w := e.post(t, e.fra, "", body)
		if w.Code != want {
			t.Fatalf("batch %d: %d, want %d: %s", i, w.Code, want, w.Body)
		}
		if want == 429 && w.Header().Get("Retry-After") == "" {
			t.Error("429 without Retry-After")
		}
	}
}

// TestIngestBodyIncomplete sends batches over real HTTP to a server whose
// read timeout is short: a body cut off by the timeout or by the client's
// closing its side is not the client's bad input. It gets 503
// body_incomplete with Retry-After, which shippers send again (syslog-ng
// drops a 4xx), and nothing of it is written, though its first half holds
// whole, valid lines.
func TestIngestBodyIncomplete(t *testing.T) {
	e := newIngestEnv(t, IngestConfig{}, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: e.h, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 300 * time.Millisecond}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	var lines []byte
	for i := range 200 {
		lines = append(lines, edgeLogLine(i, "FRA1")+"\n"...)
	}
	half := bytes.LastIndexByte(lines[:len(lines)/2], '\n') + 1 // whole lines only
	for _, tt := range []struct {
		name, encoding string
		body           []byte
		sent           int  // bytes of body sent
		cut            bool // close the sending side, else stall past the read timeout
	}{
		{"stalled", "", lines, half, false},
		{"cut", "", lines, half, true},
		{"stalled, gzip", "gzip", gzipped(t, lines), len(gzipped(t, lines)) / 2, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(2 * time.Minute)) // a guard against a hang
			head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: ingest\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n",
				EdgeLogsPath, e.fra, len(tt.body))
			if tt.encoding != "" {
				head += "Content-Encoding: " + tt.encoding + "\r\n"
			}
			if _, err := conn.Write(append([]byte(head+"\r\n"), tt.body[:tt.sent]...)); err != nil {
				t.Fatal(err)
			}
			if tt.cut {
				conn.(*net.TCPConn).CloseWrite()
			}
			// The answer comes once the server gives up on the rest.
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body struct{ Error struct{ Code string } }
			json.NewDecoder(resp.Body).Decode(&body)
			if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || body.Error.Code != cdnapi.CodeBodyIncomplete {
				t.Errorf("%d, Retry-After %q, code %q; want 503 body_incomplete with Retry-After",
					resp.StatusCode, resp.Header.Get("Retry-After"), body.Error.Code)
			}
		})
	}
	if page, err := e.st.ListAssets(t.Context(), cdnapi.AssetQuery{Limit: 10}); err != nil || len(page) != 0 {
		t.Errorf("%d assets listed (%v) from batches that did not arrive whole, want none", len(page), err)
	}
	// Sent whole, the same batch is taken.
	if w := e.post(t, e.fra, "", lines); w.Code != 200 || !strings.Contains(w.Body.String(), `"taken":200`) {
		t.Errorf("the whole batch: %d %s", w.Code, w.Body)
	}
}

// TestIngestStoreBehind: a store that is behind, here a real SQLite file
// whose write lock another connection holds (BEGIN IMMEDIATE), so that
// commits wait for it. With one commit at a time and a store timeout of a
// second, batches sent together wait for the commit slot or for the lock
// past the store timeout: each gets 503 storage_unavailable with
// Retry-After over real HTTP, and none is listed. Once the lock is
// released, each sent again is taken, and every request is one row.
func TestIngestStoreBehind(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "behind.db")
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	e := newIngestEnvOn(t, st, IngestConfig{MaxCommits: 1, StoreTimeout: time.Second}, nil)
	srv := httptest.NewServer(e.h)
	t.Cleanup(srv.Close)
	post := func(body string) (*http.Response, string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+EdgeLogsPath, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+e.fra)
		c := &http.Client{Timeout: 2 * time.Minute} // a guard against a hang
		resp, err := c.Do(req)
		if err != nil {
			t.Error(err)
			return nil, ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	// A first batch, before the lock, so that the regions are read.
	if resp, body := post(edgeLogLine(1000, "FRA1") + "\n"); resp == nil || resp.StatusCode != 200 {
		t.Fatalf("the first batch: %s", body)
	}

	holder, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Close() })
	lock, err := holder.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lock.Close() })
	if _, err := lock.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil { // SQLite's write lock
		t.Fatal(err)
	}

	batches := make([]string, 4)
	for b := range batches {
		for i := range 10 {
			batches[b] += edgeLogLine(10*b+i, "FRA1") + "\n"
		}
	}
	var wg sync.WaitGroup
	for b, batch := range batches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, body := post(batch)
			if resp == nil {
				return
			}
			var answer struct{ Error struct{ Code string } }
			json.Unmarshal([]byte(body), &answer)
			retry, err := strconv.Atoi(resp.Header.Get("Retry-After"))
			if resp.StatusCode != 503 || answer.Error.Code != cdnapi.CodeStorageUnavailable || err != nil || retry < 1 {
				t.Errorf("batch %d while the store is behind: %d, Retry-After %q: %s",
					b, resp.StatusCode, resp.Header.Get("Retry-After"), body)
			}
		}()
	}
	wg.Wait()
	if page, err := e.st.ListAssets(ctx, cdnapi.AssetQuery{Limit: 100}); err != nil || len(page) != 1 {
		t.Fatalf("%d assets (%v) while the store was behind, want the first batch's 1", len(page), err)
	}

	if _, err := lock.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	// Sent again as a shipper does, until 200 (a loaded machine may still
	// give a 503 while the committer comes back), within a guard.
	for b, batch := range batches {
		for deadline := time.Now().Add(2 * time.Minute); ; {
			resp, body := post(batch)
			if resp != nil && resp.StatusCode == 200 && strings.Contains(body, `"taken":10`) {
				break
			}
			if resp == nil || resp.StatusCode != 503 || time.Now().After(deadline) {
				t.Fatalf("batch %d sent again: %s", b, body)
			}
		}
	}
	page, err := e.st.ListAssets(ctx, cdnapi.AssetQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]int{}
	for _, a := range page {
		ids[a.ID]++
	}
	if len(page) != 41 || len(ids) != 41 {
		t.Errorf("%d assets, %d requests, once the batches were sent again; want 41 of each", len(page), len(ids))
	}
}
