package httpapi

import (
	"net/http"
	"net/http/pprof"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/cdnapi/cdnapi/internal/httpapi/pages"
)

// This file is the route table of every listener. Paths asked for on the
// wrong public listener answer 404 with a message that names the right one.

// errNoSuchPath answers a path that no listener serves.
var errNoSuchPath = notFound("no endpoint has this path; GET /api/v1/openapi.json lists the endpoints")

// addAPIRoutes registers the routes of the API listener.
func addAPIRoutes(rt *router, cfg Config) {
	cache := newPageCache(cfg.PageCacheTTL, cfg.Metrics.cacheCounters("api"))
	public := newPublicCache(cfg, "api")
	rt.resource("/api/v1/files", cache.handler(filesRequest(cfg)))
	rt.resource("/api/v1/status", public.handler(statusRequest(cfg.Status)))
	if cfg.Streams != nil {
		rt.resource(pathStatusStream, handleStatusStream(cfg, cfg.Streams))
	}
	if cfg.History != nil {
		rt.resource(pathIncidents, public.handler(incidentsRequest(cfg)))
		rt.resource(pathUptime, cachedRender(public, pathUptime, true, nil, renderUptime(cfg)))
		rt.resource(pathIncidentsFeed, incidentsFeedHandler(public, cfg))
	}
	rt.resource("/api/v1/openapi.json", handleOpenAPI(cfg.OpenAPI))
	rt.resource("/{$}", handlePage(pages.Index(cfg.addresses(), cfg.History != nil)))
	rt.resource("/docs", handlePage(pages.MustDocs(cfg.OpenAPI, cfg.addresses())))
	rt.resource("/robots.txt", handleRobots())
	rt.resource("/status", cachedRender(public, "/status", false, statusPageLive(cfg), renderStatusPage(cfg)))

	rt.missing("/api/v1/regions", "regions are served on the edge address, not on the API address")
	rt.missing("/api/v1/assets", "assets are served on the edge address, not on the API address")
	rt.missing("/", errNoSuchPath.Message)
}

// addEdgeRoutes registers the routes of the edge listener.
func addEdgeRoutes(rt *router, cfg Config) {
	cache := newPageCache(cfg.PageCacheTTL, cfg.Metrics.cacheCounters("edge"))
	rt.resource("/api/v1/regions", cache.handler(regionsRequest(cfg)))
	rt.resource("/api/v1/assets", cache.handler(assetsRequest(cfg)))
	rt.resource("/api/v1/openapi.json", handleOpenAPI(cfg.OpenAPI))

	rt.missing("/api/v1/files", "files are served on the API address, not on the edge address")
	rt.missing("/api/v1/status", "the status is served on the API address, not on the edge address")
	rt.missing("/api/v1/status/", "the status is served on the API address, not on the edge address")
	rt.missing("/docs", "the documentation is served on the API address, not on the edge address")
	rt.missing("/status", "the status page is served on the API address, not on the edge address")
	rt.missing("/", errNoSuchPath.Message)
}

// addAdminRoutes registers the routes of the admin listener. The profiling
// handlers are registered here explicitly: importing net/http/pprof also
// registers them on http.DefaultServeMux, which no listener serves.
func addAdminRoutes(mux *http.ServeMux, cfg AdminConfig) {
	mux.Handle("GET /healthz", named("/healthz", handleHealthz()))
	mux.Handle("GET /readyz", named("/readyz", handleReadyz(cfg)))
	if cfg.Gatherer != nil {
		mux.Handle("GET /metrics", named("/metrics", promhttp.HandlerFor(cfg.Gatherer, promhttp.HandlerOpts{})))
	}
	// Profiles that last (the CPU profile, the trace, a delta profile with
	// seconds) run one at a time, for at most MaxProfileSeconds.
	gate := &profileGate{}
	mux.Handle("/debug/pprof/", named("/debug/pprof/", gate.bound(http.HandlerFunc(pprof.Index), 0)))
	// pprof's cmdline would show the command line, and with it any secret
	// given as a flag (--cursor-secret, a DSN's password). It is not served.
	mux.Handle("/debug/pprof/cmdline", named("/debug/pprof/cmdline", http.NotFoundHandler()))
	mux.Handle("/debug/pprof/profile", named("/debug/pprof/profile", gate.bound(http.HandlerFunc(pprof.Profile), defaultProfileSeconds)))
	mux.Handle("/debug/pprof/symbol", named("/debug/pprof/symbol", http.HandlerFunc(pprof.Symbol)))
	mux.Handle("/debug/pprof/trace", named("/debug/pprof/trace", gate.bound(http.HandlerFunc(pprof.Trace), 1)))
}
