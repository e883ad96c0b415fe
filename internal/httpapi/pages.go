package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/httpapi/pages"
)

// The human pages of the API listener are rendered by package pages; this
// file serves them through the representation writer, with the CSP each
// page comes with. Query strings are ignored: the pages are for people, and
// links from elsewhere carry all sorts.

// cachePages is the Cache-Control of the static pages (/, /docs); the status
// page is never cached.
const cachePages = "public, max-age=300"

// DefaultStatusRefresh is how often the status page refreshes itself when
// Config.StatusRefresh is zero.
const DefaultStatusRefresh = 5 * time.Second

// statusPageIncidents is how many incidents the status page lists.
const statusPageIncidents = 10

const contentTypeHTML = "text/html; charset=utf-8"

// handlePage serves a page rendered once, at start. Its ETag and gzip
// coding are computed once, here.
func handlePage(p pages.Page) http.Handler {
	rep := &representation{contentType: contentTypeHTML, cacheControl: cachePages, csp: p.CSP, body: p.Body}
	rep.precompute()
	return http.HandlerFunc(rep.serve)
}

// handleStatusPage serves /status: the live document from memory, and the
// regions, incidents and uptime from the store within the request's store
// deadline. When storage is down, or does not answer in time, the page
// still answers at once with the live states and says that the history is
// unavailable.
func handleStatusPage(cfg Config) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := time.Now().UTC()
		d := pages.StatusData{Doc: cfg.Status.Document(), Now: now, Refresh: cfg.StatusRefresh}
		if storageDown(d.Doc) || cfg.History == nil {
			// The evaluator has just seen the store fail: asking it again
			// would only make the page wait for the deadline.
			d.RegionsErr, d.HistoryErr = true, true
		} else {
			ctx, cancel := context.WithTimeout(r.Context(), cfg.StoreTimeout)
			defer cancel()
			var err error
			if d.Regions, err = cfg.Store.ListRegions(ctx); err != nil {
				d.RegionsErr = true
				storeError(r, err) // logs it
			}
			d.Incidents, err = cfg.History.ListIncidents(ctx, cdnapi.IncidentQuery{Limit: statusPageIncidents})
			if err == nil {
				_, d.Uptime, err = cdnapi.ReadUptime(ctx, cfg.History, now)
			}
			if err != nil {
				d.Incidents, d.Uptime, d.HistoryErr = nil, nil, true
				storeError(r, err)
			}
		}
		p := pages.Status(d)
		rep := representation{contentType: contentTypeHTML, cacheControl: cacheStatus, csp: p.CSP, body: p.Body}
		rep.serve(w, r)
	})
}

// storageDown reports whether doc says that storage is failing.
func storageDown(doc cdnapi.StatusDocument) bool {
	for _, c := range doc.Components {
		if c.Name == cdnapi.ComponentStorage {
			return c.Status == cdnapi.StatusMajorOutage
		}
	}
	return false
}
