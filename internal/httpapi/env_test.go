package httpapi

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/api"
	"github.com/cdnapi/cdnapi/internal/apitest"
	"github.com/cdnapi/cdnapi/internal/health"
	"github.com/cdnapi/cdnapi/internal/sqlite"
	"github.com/cdnapi/cdnapi/internal/storetest"
	"github.com/cdnapi/cdnapi/internal/teststore"
)

// The fixture sizes of a test environment. The file count is not a multiple
// of most limits, so walks end on partial pages as well as full ones.
const (
	fixtureFiles      = 101
	fixtureOtherFiles = 23
	fixtureAssets     = 211
	otherProject      = "other"
)

// env is one test environment: a real SQLite store in a temporary directory
// with fixtures, the real handlers of both public listeners, each also on a
// loopback server, and the contract validator every answer goes through.
type env struct {
	store   *sqlite.Store
	cursors *cdnapi.CursorCodec
	status  *health.Evaluator
	api     http.Handler
	edge    http.Handler
	apiURL  string
	edgeURL string
	client  *http.Client
	v       *apitest.Validator
	logs    *syncBuffer
	reg     *prometheus.Registry
	metrics *Metrics
	logger  *slog.Logger

	files      []cdnapi.File // of the default project, in list order
	otherFiles []cdnapi.File // of otherProject, in list order
	assets     []cdnapi.Asset
	regions    []cdnapi.Region
}

// syncBuffer is a bytes.Buffer that handlers on several goroutines can log
// into.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// newEnv builds an environment. tweak, if not nil, may change the Config
// before the handlers are built.
func newEnv(t testing.TB, tweak func(*Config)) *env {
	t.Helper()
	ctx := context.Background()
	store := teststore.SQLite(t)
	e := &env{store: store, v: apitest.NewValidator(t), logs: &syncBuffer{}, reg: prometheus.NewRegistry()}
	e.metrics = NewMetrics(e.reg)
	e.logger = slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))

	e.regions = storetest.Regions()
	e.files = storetest.Files(fixtureFiles, DefaultProject, 1)
	e.otherFiles = storetest.Files(fixtureOtherFiles, otherProject, 2)
	e.assets = storetest.Assets(fixtureAssets, storetest.RegionCodes(e.regions), 3)
	must(t, storetest.Writer(store).PutRegions(ctx, e.regions))
	must(t, storetest.Writer(store).PutFiles(ctx, e.files))
	must(t, storetest.Writer(store).PutFiles(ctx, e.otherFiles))
	must(t, storetest.Writer(store).PutAssets(ctx, e.assets))
	storetest.SortRegions(e.regions)
	storetest.SortFiles(e.files)
	storetest.SortFiles(e.otherFiles)
	storetest.SortAssets(e.assets)

	cfg := storeConfig(t, store)
	cfg.History, cfg.Logger, cfg.Metrics = store, e.logger, e.metrics
	e.cursors, e.status = cfg.Cursors, cfg.Status.(*health.Evaluator)
	if tweak != nil {
		tweak(&cfg)
	}
	e.api, e.edge = NewAPI(cfg), NewEdge(cfg)
	apiSrv, edgeSrv := httptest.NewServer(e.api), httptest.NewServer(e.edge)
	t.Cleanup(apiSrv.Close)
	t.Cleanup(edgeSrv.Close)
	e.apiURL, e.edgeURL = apiSrv.URL, edgeSrv.URL
	// The client must see the bytes as sent: no transparent gzip.
	e.client = &http.Client{Transport: &http.Transport{DisableCompression: true}}
	t.Cleanup(e.client.CloseIdleConnections)
	return e
}

// storeConfig returns the Config of the public handlers over st, wired as
// serve wires them by default: the cursors signed with the store's secret,
// and the status evaluated once. Each test adds what it tests. A store
// ping is never read as slow: on a loaded machine a ping can pass the
// default 250 ms, and a degraded storage would change every banner that a
// test of the pages expects (the health package tests slowness).
func storeConfig(tb testing.TB, st cdnapi.Store) Config {
	tb.Helper()
	secret, err := st.CursorSecret(tb.Context())
	must(tb, err)
	cursors, err := cdnapi.NewCursorCodec(secret)
	must(tb, err)
	status := health.New(st, health.Config{Region: "Test Region", SlowThreshold: time.Hour})
	status.Evaluate(tb.Context())
	return Config{Store: st, Cursors: cursors, Status: status, OpenAPI: api.JSON()}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Listener names of requests.
const (
	onAPI  = "api"
	onEdge = "edge"
)

// newRequest returns a request for target (a path and query) on listener.
func (e *env) newRequest(t testing.TB, listener, method, target string, header http.Header) *http.Request {
	t.Helper()
	base := e.apiURL
	if listener == onEdge {
		base = e.edgeURL
	}
	req, err := http.NewRequest(method, base+target, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	return req
}

// do sends a request over loopback HTTP, reads the answer and checks it
// against the contract.
func (e *env) do(t testing.TB, listener, method, target string, header http.Header) (*http.Response, []byte) {
	t.Helper()
	req := e.newRequest(t, listener, method, target, header)
	res, err := e.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	e.v.Check(t, req, res, body)
	return res, body
}

// get is do with GET and no extra headers.
func (e *env) get(t testing.TB, listener, target string) (*http.Response, []byte) {
	t.Helper()
	return e.do(t, listener, http.MethodGet, target, nil)
}

// serve runs a request through a handler in process, without a network,
// and checks the answer against the contract. It is for tests that send
// thousands of requests.
func (e *env) serve(t testing.TB, listener, method, target string, header http.Header) (*http.Response, []byte) {
	t.Helper()
	req := e.newRequest(t, listener, method, target, header)
	h := e.api
	if listener == onEdge {
		h = e.edge
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	res := rec.Result()
	body := rec.Body.Bytes()
	e.v.Check(t, req, res, body)
	return res, body
}

// hdr builds a header from name, value pairs.
func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

// logLines returns the access-log lines (msg "request") logged so far.
func (e *env) logLines() []string {
	var lines []string
	for l := range strings.Lines(e.logs.String()) {
		if strings.Contains(l, `"msg":"request"`) {
			lines = append(lines, l)
		}
	}
	return lines
}
