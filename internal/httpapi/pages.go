package httpapi

import (
	"context"
	"net/http"
	"sync"
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

// addresses are the base URLs the pages name.
func (cfg Config) addresses() pages.Addresses {
	return pages.Addresses{API: cfg.APIURL, Edge: cfg.EdgeURL}
}

// handlePage serves a page rendered once, at start. Its ETag and gzip
// coding are computed once, here.
func handlePage(p pages.Page) http.Handler {
	rep := &representation{contentType: contentTypeHTML, cacheControl: cachePages, csp: p.CSP, body: p.Body}
	rep.precompute()
	return http.HandlerFunc(rep.serve)
}

// renderStatusPage renders /status: the live document from memory, and the
// regions, incidents and uptime from the store within the request's store
// deadline. When storage is down, or does not answer in time, the page
// still answers at once with the live states and says that the history is
// unavailable. The part read from the store is kept for PageCacheTTL, as
// hot list pages are, so that the many people a status page draws during
// an outage, each refreshing it, cost the store a few queries a second.
func renderStatusPage(cfg Config) render {
	kept := &keptStatus{ttl: cfg.PageCacheTTL}
	return func(r *http.Request) (*representation, error) {
		now := time.Now().UTC()
		d := pages.StatusData{Doc: cfg.Status.Document(), Now: now, Refresh: cfg.StatusRefresh}
		if nd, ok := cfg.Status.(notDeployedSource); ok {
			d.NotDeployed = nd.NotDeployed()
		}
		if storageDown(d.Doc) || cfg.History == nil {
			// The evaluator has just seen the store fail: asking it again
			// would only make the page wait for the deadline.
			d.RegionsErr, d.HistoryErr = true, true
		} else {
			st := kept.read(r, cfg, now)
			d.Regions, d.RegionsErr = st.regions, st.regionsErr
			d.Incidents, d.Uptime, d.HistoryErr = st.incidents, st.uptime, st.historyErr
			d.MeasuredSince = st.since
		}
		p := pages.Status(d)
		return &representation{contentType: contentTypeHTML, cacheControl: cacheStatus, csp: p.CSP, body: p.Body}, nil
	}
}

// keptStatus keeps the stored part of the status page for ttl. Requests
// that find it expired while another one reads it wait for that read rather
// than start their own, so a crowd refreshing the page during an outage
// costs the store one read per ttl. A failed read is kept too: it took up
// to the store timeout, and the crowd must not repeat it at once. A ttl
// that is not positive keeps nothing, and then requests never wait on
// each other.
type keptStatus struct {
	ttl     time.Duration
	mu      sync.Mutex
	at      time.Time
	version uint64 // Config.RegionsVersion when st was read
	st      storedStatus
}

// read returns the stored part as of now, reading it when it is older
// than ttl.
func (k *keptStatus) read(r *http.Request, cfg Config, now time.Time) storedStatus {
	if k.ttl <= 0 {
		return readStatusPage(r, cfg, now)
	}
	// A change of a probed region is read at once, as in the regions list.
	var version uint64
	if cfg.RegionsVersion != nil {
		version = cfg.RegionsVersion()
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	// now was taken before waiting on the lock: a request that waited for
	// another's read finds that read fresh.
	if k.at.IsZero() || now.Sub(k.at) >= k.ttl || version != k.version {
		k.st, k.at, k.version = readStatusPage(r, cfg, now), now, version
	}
	return k.st
}

// storedStatus is the part of the status page read from the store.
type storedStatus struct {
	regions    []cdnapi.Region
	regionsErr bool
	incidents  []cdnapi.Incident
	uptime     []cdnapi.Uptime
	since      time.Time // when the history starts; zero for none
	historyErr bool
}

// readStatusPage reads the regions, the recent incidents and the uptime
// within one store deadline, and logs what fails.
func readStatusPage(r *http.Request, cfg Config, now time.Time) storedStatus {
	// Other requests may wait on this read: the first one hanging up must
	// not cancel it; the store timeout still bounds it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), cfg.StoreTimeout)
	defer cancel()
	var st storedStatus
	var err error
	if st.regions, err = cfg.Store.ListRegions(ctx); err != nil {
		st.regionsErr = true
		storeError(r, err) // logs it
	}
	st.incidents, err = cfg.History.ListIncidents(ctx, cdnapi.IncidentQuery{Limit: statusPageIncidents})
	if err == nil {
		st.since, st.uptime, err = cdnapi.ReadUptime(ctx, cfg.History, now)
	}
	if err != nil {
		st.incidents, st.uptime, st.historyErr = nil, nil, true
		storeError(r, err)
	}
	return st
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
