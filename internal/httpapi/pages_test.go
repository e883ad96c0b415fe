package httpapi

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
)

// pageEdge is the edge address TestPages gives the pages to name.
const pageEdge = "http://edge.test:18081"

// getPage fetches a human page over loopback HTTP and checks what every page
// carries. The pages are outside the OpenAPI document, which describes the
// JSON API only, so their headers are checked here.
func getPage(t *testing.T, e *env, path, cacheControl string) string {
	t.Helper()
	res, err := e.client.Get(e.apiURL + path)
	must(t, err)
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	must(t, err)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("%s: status %d", path, res.StatusCode)
	}
	for name, want := range map[string]string{
		"Content-Type":           "text/html; charset=utf-8",
		"X-Content-Type-Options": "nosniff",
		"Cache-Control":          cacheControl,
	} {
		if got := res.Header.Get(name); got != want {
			t.Errorf("%s: %s %q, want %q", path, name, got, want)
		}
	}
	csp := res.Header.Get("Content-Security-Policy")
	if !strings.HasPrefix(csp, "default-src 'none'; style-src 'sha256-") || strings.Contains(csp, "unsafe") ||
		!strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "connect-src 'self'") {
		t.Errorf("%s: CSP %q", path, csp)
	}
	if res.Header.Get("ETag") == "" || !strings.HasPrefix(res.Header.Get("X-Request-Id"), "req_") {
		t.Errorf("%s: ETag %q, X-Request-Id %q", path, res.Header.Get("ETag"), res.Header.Get("X-Request-Id"))
	}
	page := string(body)
	// Nothing from elsewhere: nothing the CSP would have to allow. Links
	// leave only for the edge address. The feed's alternate link loads
	// nothing.
	checked := strings.Replace(page, `<link rel="alternate" type="application/atom+xml" title="cdnapi incidents" href="`+pathIncidentsFeed+`">`, "", 1)
	for _, banned := range []string{"src=", "<link", "<img", "<iframe", "url(", "@import"} {
		if strings.Contains(checked, banned) {
			t.Errorf("%s contains %q", path, banned)
		}
	}
	for _, m := range regexp.MustCompile(`href="(http[^"]*)"`).FindAllStringSubmatch(page, -1) {
		if !strings.HasPrefix(m[1], pageEdge+"/") {
			t.Errorf("%s links to %s", path, m[1])
		}
	}
	return page
}

func TestPages(t *testing.T) {
	e := newEnv(t, func(cfg *Config) { cfg.APIURL, cfg.EdgeURL = "http://api.test:18080", pageEdge })
	for _, path := range []string{"/", "/?utm_source=x"} {
		page := getPage(t, e, path, cachePages)
		for _, want := range []string{"<!doctype html>", `href="/status"`, `href="/docs"`, "/api/v1/openapi.json",
			"/api/v1/files", "/api/v1/status", "/api/v1/regions", "/api/v1/assets", "/api/v1/status/incidents",
			// The edge address, named and linked; the tables' captions.
			`<a href="` + pageEdge + `/api/v1/regions"><code>GET /api/v1/regions</code></a>`,
			"<caption>On the API address, <code>http://api.test:18080</code></caption>",
			"<caption>On the edge address, <code>" + pageEdge + "</code></caption>",
			`<meta name="description" content="The read API`} {
			if !strings.Contains(page, want) {
				t.Errorf("%s does not mention %s", path, want)
			}
		}
	}
	docs := getPage(t, e, "/docs", cachePages)
	for _, want := range []string{`id="listIncidents"`, "curl -s &#39;" + pageEdge + "/api/v1/regions&#39;",
		"curl -s &#39;http://api.test:18080/api/v1/files&#39;"} {
		if !strings.Contains(docs, want) {
			t.Errorf("/docs lacks %s", want)
		}
	}
	if strings.Contains(getPage(t, e, "/docs", cachePages), "<script") {
		t.Error("/docs has a script")
	}
	res, _ := e.get(t, onEdge, "/status")
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("/status on the edge: %d, want 404", res.StatusCode)
	}
}

// TestStatusPage: the live states, the regions by zone, the incidents with
// their messages and the uptime bars; and, with the store closed, the live
// states still, with the history said to be unavailable.
func TestStatusPage(t *testing.T) {
	e := newEnv(t, nil)
	ctx := t.Context()
	now := time.Now().UTC()
	must(t, e.store.RecordStatusChange(ctx, cdnapi.StatusChange{Kind: cdnapi.SubjectComponent, Subject: cdnapi.ComponentAPI,
		Status: cdnapi.StatusOperational, Source: cdnapi.SourceProbe, At: now.Add(-40 * 24 * time.Hour)}))
	must(t, e.store.UpdateIncident(ctx, cdnapi.IncidentUpdate{Component: cdnapi.ComponentUpload,
		Status: cdnapi.StatusUnderMaintenance, Message: "Racks <moving> & back by 18:00", At: now.Add(-time.Hour)}))
	must(t, e.store.UpdateIncident(ctx, cdnapi.IncidentUpdate{Component: cdnapi.ComponentStorage,
		Status: cdnapi.StatusMajorOutage, At: now.Add(-3 * 24 * time.Hour)}))
	must(t, e.store.UpdateIncident(ctx, cdnapi.IncidentUpdate{Component: cdnapi.ComponentStorage,
		Status: cdnapi.StatusOperational, At: now.Add(-2 * 24 * time.Hour)}))

	// An operator's maintenance with an end, which the page shows.
	end := now.Add(2 * time.Hour).Truncate(time.Second)
	must(t, e.store.SetComponentOverride(ctx, cdnapi.ComponentOverride{Name: cdnapi.ComponentVirusScanning,
		Status: cdnapi.StatusUnderMaintenance, Until: end, UpdatedAt: now}))
	e.status.Evaluate(ctx)
	wantUntil := end.Format("15:04 UTC")
	if end.Truncate(24 * time.Hour).After(now.Truncate(24 * time.Hour)) {
		wantUntil = end.Format("2 Jan 15:04 UTC")
	}

	page := getPage(t, e, "/status", "no-store")
	for _, want := range []string{
		// The banner, from the live document, and the regions of the
		// fixture that are not operational, which "All systems
		// operational" once hid.
		"Under maintenance</p>",
		"2 regions not operational: São Paulo (GRU1) degraded performance, Sydney (SYD1) under maintenance.",
		`<a href="#h-regions">See the regions</a>`,
		"Virus Scanning</span> <span class=\"state t-under_maintenance\">Under maintenance <span class=\"until\">until " + wantUntil + "</span>",
		// Uptime over the 40 days measured, not 90; the legend of the bars.
		"96.67% over 30 days; 97.50% over the 40 days since ", // storage: one day down of 30, of 40,
		`<li><span class="k k-none"></span>No data: before measuring began</li>`,
		"Racks &lt;moving&gt; &amp; back", // the message, escaped
		"Upload Service: <span class=\"t-under_maintenance\">Under maintenance</span> <span class=\"state\">(ongoing)</span>",
		"Storage: <span class=\"t-major_outage\">Major outage</span>",
		"after 24 h 0 min",                 // the resolved incident's length
		"<h3>eu-central</h3>", "Frankfurt", // regions by zone
		`class="d-major_outage"`, `class="d-none"`, // bars: the outage day, and days before the history
		`data-refresh="5"`, "<script>",
		`<main id="main"`, `role="status"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("/status lacks %q", want)
		}
	}
	if n := strings.Count(page, `<li tabindex="0"`); n != 4*cdnapi.UptimeDays {
		t.Errorf("%d bars, want %d", n, 4*cdnapi.UptimeDays)
	}
	if strings.Contains(page, "History is unavailable") {
		t.Error("history said to be unavailable with the store up")
	}

	e.store.Close()
	e.status.Evaluate(ctx) // the evaluator sees storage fail
	start := time.Now()
	page = getPage(t, e, "/status", "no-store")
	if took := time.Since(start); took > time.Second {
		t.Errorf("the page took %v with storage down", took)
	}
	for _, want := range []string{"Major outage", "History is unavailable", "Storage</span> <span class=\"state t-major_outage\">Major outage"} {
		if !strings.Contains(page, want) {
			t.Errorf("/status with storage down lacks %q", want)
		}
	}
}

// TestStatusPageKeepsHistory: with a page cache, the part of /status read
// from the store is read once per PageCacheTTL, not once per request; the
// live states are never kept. Without one, every request reads the store.
func TestStatusPageKeepsHistory(t *testing.T) {
	for _, tc := range []struct {
		ttl      time.Duration
		wantRead bool // whether the second request sees the new incident
	}{
		{ttl: time.Hour, wantRead: false},
		{ttl: 0, wantRead: true},
	} {
		t.Run(tc.ttl.String(), func(t *testing.T) {
			e := newEnv(t, func(cfg *Config) { cfg.PageCacheTTL = tc.ttl })
			getPage(t, e, "/status", "no-store")
			must(t, e.store.UpdateIncident(t.Context(), cdnapi.IncidentUpdate{Component: cdnapi.ComponentUpload,
				Status: cdnapi.StatusMajorOutage, Message: "a new incident", At: time.Now()}))
			if got := strings.Contains(getPage(t, e, "/status", "no-store"), "a new incident"); got != tc.wantRead {
				t.Errorf("PageCacheTTL %v: the second request shows the new incident: %v, want %v", tc.ttl, got, tc.wantRead)
			}
			e.store.Close()
			e.status.Evaluate(t.Context())
			if page := getPage(t, e, "/status", "no-store"); !strings.Contains(page, "History is unavailable") {
				t.Error("the page did not show the storage outage at once")
			}
		})
	}
}
