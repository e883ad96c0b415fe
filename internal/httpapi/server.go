// Package httpapi is the HTTP adapter of cdnapi: the handlers of the API and
// edge listeners, which serve the read API of API.md, and of the admin
// listener, which serves probes, metrics and profiles.
//
// NewAPI, NewEdge and NewAdmin take their dependencies explicitly and return
// an http.Handler; cmd/cdnapi gives each to its own http.Server. Every route
// of every listener is in routes.go. The middleware around the routes, from
// the outside in:
//
//	withRequest       request ID, security headers, CORS
//	logRequests       one access-log line and metrics per request
//	recoverPanics     a panic becomes a logged 500 internal_error
//	refuseUncleanPaths
//	ServeMux          plain path patterns; see router
//	router            OPTIONS is a CORS preflight; methods other than GET and HEAD get 405
//	Config.Guard      authentication and rate limiting (guard.go)
//	handler           parses the query, asks the store, writes the answer
//
// Every error a client sees goes through writeError, and every success through
// one writer of representations (representation.go) that handles ETag, 304, gzip and
// HEAD alike for every endpoint.
package httpapi

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/cdnapi/cdnapi"
)

// Config holds the dependencies and settings of the public listeners, the
// API and the edge. Store, Cursors and, for the API, Status are required.
type Config struct {
	// Store answers the lists.
	Store cdnapi.ListReader
	// RegionsVersion, when set, returns a number that changes whenever a
	// region status that Store serves from memory changes (the probed
	// regions of health.Evaluator.ProbedRegions). The regions list and the
	// status page key their caches on it, so that such a change shows at
	// once, not a PageCacheTTL later.
	RegionsVersion func() uint64
	// Cursors signs and checks the pagination cursors.
	Cursors *cdnapi.CursorCodec
	// Status provides the status document from memory (API listener only).
	Status StatusSource
	// History reads the status history: incidents and uptime (API listener
	// only). Without it, those endpoints are not served, and the status
	// page shows the live states only.
	History History
	// StatusRefresh is how often the status page refreshes itself in the
	// browser. Default DefaultStatusRefresh.
	StatusRefresh time.Duration
	// Project is the default project, whose files are listed when the
	// request does not name one through withProject. Default "default".
	Project string
	// Logger receives the errors. Default: discard.
	Logger *slog.Logger
	// AccessLog receives one line per request. Default: Logger. Give it a
	// logger that writes through a buffer (internal/logbuf), so that
	// logging does not cost a write system call per request.
	AccessLog *slog.Logger
	// Metrics records every request. Nil records nothing.
	Metrics *Metrics
	// StoreTimeout bounds the store work of one request; past it the answer
	// is 503 storage_unavailable, never a hang. Default DefaultStoreTimeout.
	StoreTimeout time.Duration
	// PageCacheTTL is how long the rendered pages of the lists are kept and
	// served again to requests for the same URL; zero keeps nothing. See
	// pageCache.
	PageCacheTTL time.Duration
	// CORSOrigins are the origins browsers may read answers from. Empty, or
	// containing "*", allows every origin. Default ["*"].
	CORSOrigins []string
	// OpenAPI is the OpenAPI document, served as is at /api/v1/openapi.json.
	OpenAPI []byte
	// Streams bounds the live status streams (API listener only); nil does
	// not serve GET /api/v1/status/stream.
	Streams *StatusStreams
	// APIURL and EdgeURL are the base URLs of the two listeners as people
	// reach them ("http://127.0.0.1:8080"), which the pages at / and /docs
	// name and link to. Empty: the OpenAPI document's defaults.
	APIURL, EdgeURL string
	// PublicURL is the API listener's base URL as readers reach it from
	// outside ("https://status.example.com"), which the Atom feed's links
	// and ids start with. Empty: each request's own scheme and Host, so a
	// reader gets back the name it used, and the ids change with it.
	PublicURL string
	// Guard, when set, wraps the handler of every resource of both public
	// listeners, after method dispatch, so it sees only GET and HEAD:
	// preflights, 404s and 405s never reach it. It is called once per route at
	// construction, with the route's pattern, so it can treat routes
	// differently (the status stays public when keys are required).
	//
	// NewGuard's is the authentication and rate limiting of API.md. A
	// guard refuses a request with an error answer, after setting headers
	// such as RateLimit or Retry-After, and lets one through with
	// next.ServeHTTP, the key's project set in the request state.
	Guard func(route string, next http.Handler) http.Handler
}

// DefaultStoreTimeout is the store deadline of a request when
// Config.StoreTimeout is zero. A page is a keyset range scan that takes well
// under a millisecond; a store that needs seconds is failing.
const DefaultStoreTimeout = 2 * time.Second

// DefaultProject is the project of Config.Project when it is empty.
const DefaultProject = "default"

// withDefaults returns cfg with its zero settings replaced by the defaults.
func (cfg Config) withDefaults() Config {
	if cfg.Project == "" {
		cfg.Project = DefaultProject
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.AccessLog == nil {
		cfg.AccessLog = cfg.Logger
	}
	if cfg.StoreTimeout <= 0 {
		cfg.StoreTimeout = DefaultStoreTimeout
	}
	if len(cfg.CORSOrigins) == 0 {
		cfg.CORSOrigins = []string{"*"}
	}
	if cfg.StatusRefresh <= 0 {
		cfg.StatusRefresh = DefaultStatusRefresh
	}
	if cfg.Guard == nil {
		cfg.Guard = func(_ string, next http.Handler) http.Handler { return next }
	}
	return cfg
}

// NewAPI returns the handler of the API listener: files, status, the OpenAPI
// document and the human pages. It panics if Store, Cursors or Status is
// nil, which is a wiring mistake, not a runtime condition.
func NewAPI(cfg Config) http.Handler {
	cfg = cfg.withDefaults()
	if cfg.Store == nil || cfg.Cursors == nil || cfg.Status == nil {
		panic("httpapi: NewAPI needs Config.Store, Config.Cursors and Config.Status")
	}
	rt := newRouter("api", cfg.Metrics, cfg.Guard)
	addAPIRoutes(rt, cfg)
	return public("api", cfg, rt.mux)
}

// NewEdge returns the handler of the edge listener: regions, assets and the
// OpenAPI document. It panics if Store or Cursors is nil.
func NewEdge(cfg Config) http.Handler {
	cfg = cfg.withDefaults()
	if cfg.Store == nil || cfg.Cursors == nil {
		panic("httpapi: NewEdge needs Config.Store and Config.Cursors")
	}
	rt := newRouter("edge", cfg.Metrics, cfg.Guard)
	addEdgeRoutes(rt, cfg)
	return public("edge", cfg, rt.mux)
}

// public wraps the mux of a public listener in the middleware of the
// package comment.
func public(listener string, cfg Config, mux http.Handler) http.Handler {
	h := refuseUncleanPaths(mux)
	h = recoverPanics(h)
	h = logRequests(cfg.AccessLog, slog.LevelInfo, cfg.Metrics, h)
	return withRequest(listener, cfg.Logger, newCORSPolicy(cfg.CORSOrigins), h)
}

// router registers the routes of a public listener on a ServeMux. The mux
// gets plain path patterns, without methods, and router dispatches on the
// method itself: ServeMux's own 404 and 405 answers are text, and every
// answer of these listeners is JSON.
type router struct {
	mux      *http.ServeMux
	guard    func(route string, next http.Handler) http.Handler
	listener string
	metrics  *Metrics
}

func newRouter(listener string, m *Metrics, guard func(string, http.Handler) http.Handler) *router {
	return &router{mux: http.NewServeMux(), guard: guard, listener: listener, metrics: m}
}

// resource serves h at pattern for GET and HEAD, answers OPTIONS as a CORS
// preflight, and any other method with 405.
func (rt *router) resource(pattern string, h http.Handler) {
	rt.metrics.knownRoute(rt.listener, pattern)
	h = rt.guard(pattern, h)
	rt.mux.Handle(pattern, named(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet, http.MethodHead:
			h.ServeHTTP(w, r)
		case http.MethodOptions:
			preflight(w, r)
		default:
			writeError(w, r, errMethodNotAllowed)
		}
	})))
}

// missing answers every request for pattern with 404 not_found and message,
// whatever the method: there is no resource here to allow methods on.
func (rt *router) missing(pattern, message string) {
	err := notFound(message)
	rt.mux.Handle(pattern, named(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, err)
	})))
}
