package httpapi

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestAdmin checks the admin listener over loopback HTTP: the probes, the
// metrics of the public listeners, and the profiles. Its answers are not
// part of the OpenAPI document, so they are checked here directly.
func TestAdmin(t *testing.T) {
	e := newEnv(t, nil)
	var draining atomic.Bool
	srv := httptest.NewServer(NewAdmin(AdminConfig{
		Store: e.store, Gatherer: e.reg, Metrics: e.metrics, Logger: e.logger, Draining: draining.Load,
	}))
	t.Cleanup(srv.Close)
	e.get(t, onAPI, "/api/v1/status") // something for /metrics to count

	get := func(path string) (int, string, http.Header) {
		t.Helper()
		res, err := e.client.Get(srv.URL + path)
		must(t, err)
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		must(t, err)
		return res.StatusCode, string(body), res.Header
	}
	for _, tc := range []struct {
		path, contains string
		status         int
	}{
		{"/healthz", "ok", 200},
		{"/readyz", "ok", 200},
		{"/metrics", `cdnapi_http_requests_total{code="200",listener="api",route="/api/v1/status"} 1`, 200},
		{"/debug/pprof/", "goroutine", 200},
		// The command line may hold secrets: not served.
		{"/debug/pprof/cmdline", "404 page not found", 404},
		{"/debug/pprof/heap?debug=1", "heap profile", 200},
	} {
		status, body, h := get(tc.path)
		if status != tc.status || !strings.Contains(body, tc.contains) {
			t.Errorf("%s: status %d, body %.200q; want %d with %q", tc.path, status, body, tc.status, tc.contains)
		}
		if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("X-Request-Id") == "" {
			t.Errorf("%s: headers %v", tc.path, h)
		}
	}

	draining.Store(true)
	if status, body, _ := get("/readyz"); status != http.StatusServiceUnavailable || body != "unavailable\n" {
		t.Errorf("readyz while draining: %d %q", status, body)
	}
	draining.Store(false)

	must(t, e.store.Close())
	status, body, h := get("/readyz")
	if status != http.StatusServiceUnavailable || body != "unavailable\n" || h.Get("Cache-Control") != "no-store" {
		t.Errorf("readyz with the store closed: %d %q", status, body)
	}
	if status, _, _ := get("/healthz"); status != http.StatusOK {
		t.Errorf("healthz with the store closed: %d", status)
	}
	if !strings.Contains(e.logs.String(), "readiness ping failed") {
		t.Errorf("the failed ping was not logged")
	}
}
