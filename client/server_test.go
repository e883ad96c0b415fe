package client_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/api"
	"github.com/cdnapi/cdnapi/internal/apitest"
	"github.com/cdnapi/cdnapi/internal/health"
	"github.com/cdnapi/cdnapi/internal/httpapi"
	"github.com/cdnapi/cdnapi/internal/pgtest"
	"github.com/cdnapi/cdnapi/internal/teststore"
)

func TestMain(m *testing.M) {
	stop, err := startExampleServer()
	if err != nil {
		fmt.Fprintln(os.Stderr, "the server of the examples:", err)
		os.Exit(1)
	}
	code := pgtest.Main(m)
	stop()
	os.Exit(code)
}

// engine opens the same database again and again (Database, then OpenAt),
// so that a test can close the store under a running server and open it
// again.
type engine = teststore.Engine

var engines = teststore.Engines

// server is the real API and edge handlers over a real store, each on a
// loopback listener. Every answer is checked against the OpenAPI document
// and counted (see checked).
type server struct {
	api, edge string
	store     *stoppableStore
	v         *apitest.Validator

	mu       sync.Mutex
	statuses []int // of every answer, in order
	served   int
	header   http.Header // of the last request
}

// startServer starts a server on a fresh database of e. tweak, if not nil,
// may change the configuration of the handlers.
func startServer(t testing.TB, e engine, tweak func(*httpapi.Config)) *server {
	t.Helper()
	ctx := context.Background()
	where := e.Database(t)
	st, err := e.OpenAt(ctx, where)
	if err != nil {
		t.Fatal(err)
	}
	s := &server{store: &stoppableStore{cur: st, reopen: func() (cdnapi.Store, error) { return e.OpenAt(ctx, where) }},
		v: apitest.NewValidator(t)}
	t.Cleanup(func() { s.store.current().Close() })

	apiHandler, edgeHandler, err := handlers(ctx, s.store, tweak)
	if err != nil {
		t.Fatal(err)
	}
	apiSrv := httptest.NewServer(s.checked(t, apiHandler))
	edgeSrv := httptest.NewServer(s.checked(t, edgeHandler))
	t.Cleanup(apiSrv.Close)
	t.Cleanup(edgeSrv.Close)
	s.api, s.edge = apiSrv.URL, edgeSrv.URL
	return s
}

// handlers returns the real handlers of the API and edge addresses over st,
// configured as serve does by default, then by tweak if it is not nil.
func handlers(ctx context.Context, st cdnapi.Store, tweak func(*httpapi.Config)) (apiHandler, edgeHandler http.Handler, err error) {
	secret, err := st.CursorSecret(ctx)
	if err != nil {
		return nil, nil, err
	}
	codec, err := cdnapi.NewCursorCodec(secret)
	if err != nil {
		return nil, nil, err
	}
	status := health.New(st, health.Config{Region: "Test Region"})
	status.Evaluate(ctx)
	cfg := httpapi.Config{Store: st, Cursors: codec, Status: status, OpenAPI: api.JSON()}
	if tweak != nil {
		tweak(&cfg)
	}
	return httpapi.NewAPI(cfg), httpapi.NewEdge(cfg), nil
}

// checked wraps h so that each answer is checked against the contract and
// its status recorded before it goes out.
func (s *server) checked(t testing.TB, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		res := rec.Result()
		body := rec.Body.Bytes()
		s.mu.Lock()
		s.statuses = append(s.statuses, res.StatusCode)
		s.header = r.Header.Clone()
		s.served++
		n := s.served
		s.mu.Unlock()
		// Checking costs a few milliseconds, more than the request; the
		// long walks check a sample of their pages, all alike, and every
		// answer that is not a 200.
		if res.StatusCode != http.StatusOK || n <= 50 || n%50 == 0 {
			s.v.Check(t, r, res, body)
		}
		for k, v := range res.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(res.StatusCode)
		io.Copy(w, bytes.NewReader(body))
	})
}

// answers returns the statuses of the answers so far, and forgets them.
func (s *server) answers() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.statuses
	s.statuses = nil
	return a
}

// lastHeader returns the header of the last request.
func (s *server) lastHeader() http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.header
}

// stoppableStore is the real store of a server, which a test can close under
// the running server, so that its lists answer 503 storage_unavailable as in
// a database outage, and open again. It forwards the calls of the handlers
// and the status evaluator; the tests write through current().
type stoppableStore struct {
	cdnapi.Store // nil: the methods the server uses are below
	reopen       func() (cdnapi.Store, error)
	mu           sync.Mutex
	cur          cdnapi.Store
	panics       atomic.Bool // when set, ListFiles panics: a server bug
}

func (s *stoppableStore) current() cdnapi.Store {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

// stop closes the store: every call fails until start.
func (s *stoppableStore) stop(t testing.TB) {
	if err := s.current().Close(); err != nil {
		t.Error(err)
	}
}

// start opens the store again.
func (s *stoppableStore) start(t testing.TB) {
	st, err := s.reopen()
	if err != nil {
		t.Error(err)
		return
	}
	s.mu.Lock()
	s.cur = st
	s.mu.Unlock()
}

func (s *stoppableStore) ListFiles(ctx context.Context, q cdnapi.FileQuery) ([]cdnapi.File, error) {
	if s.panics.Load() {
		panic("a bug in the store")
	}
	return s.current().ListFiles(ctx, q)
}

func (s *stoppableStore) ListAssets(ctx context.Context, q cdnapi.AssetQuery) ([]cdnapi.Asset, error) {
	return s.current().ListAssets(ctx, q)
}

func (s *stoppableStore) ListRegions(ctx context.Context) ([]cdnapi.Region, error) {
	return s.current().ListRegions(ctx)
}

func (s *stoppableStore) Region(ctx context.Context, code string) (cdnapi.Region, error) {
	return s.current().Region(ctx, code)
}

func (s *stoppableStore) ComponentOverrides(ctx context.Context) ([]cdnapi.ComponentOverride, error) {
	return s.current().ComponentOverrides(ctx)
}

func (s *stoppableStore) CursorSecret(ctx context.Context) ([]byte, error) {
	return s.current().CursorSecret(ctx)
}

func (s *stoppableStore) Ping(ctx context.Context) error { return s.current().Ping(ctx) }

// forEngine runs test once per engine, in parallel.
func forEngine(t *testing.T, test func(t *testing.T, e engine)) {
	for _, e := range engines {
		t.Run(e.Name, func(t *testing.T) {
			t.Parallel()
			test(t, e)
		})
	}
}

// must fails t on err.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
