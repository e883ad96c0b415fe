package httpapi

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestServerErrorCountersAtZero: every route of the public listeners has
// its 500 and 503 counters from the start, at 0, so that the share of 5xx
// is 0 rather than nothing before the first one; a request answered adds
// to its own code only.
func TestServerErrorCountersAtZero(t *testing.T) {
	e := newEnv(t, nil)
	series := requestSeries(t, e.reg)
	for _, c := range []struct{ listener, route string }{
		{"api", "/api/v1/files"}, {"api", "/api/v1/status"}, {"edge", "/api/v1/assets"}, {"edge", "/api/v1/regions"},
	} {
		for _, code := range serverErrors {
			v, ok := series[[3]string{c.listener, c.route, code}]
			if !ok || v != 0 {
				t.Errorf("requests_total{%s %s %s} before any request: %v (exists: %v), want a series at 0", c.listener, c.route, code, v, ok)
			}
		}
	}
	e.get(t, onAPI, "/api/v1/files")
	series = requestSeries(t, e.reg)
	if got := series[[3]string{"api", "/api/v1/files", "200"}]; got != 1 {
		t.Errorf("requests_total{api /api/v1/files 200} = %v, want 1", got)
	}
	if got := series[[3]string{"api", "/api/v1/files", "500"}]; got != 0 {
		t.Errorf("requests_total{api /api/v1/files 500} = %v after a 200, want 0", got)
	}
}

// requestSeries returns the series of cdnapi_http_requests_total in reg by
// listener, route and code, without making any.
func requestSeries(t *testing.T, reg prometheus.Gatherer) map[[3]string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[[3]string]float64{}
	for _, f := range families {
		if f.GetName() != "cdnapi_http_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			out[[3]string{l["listener"], l["route"], l["code"]}] = m.GetCounter().GetValue()
		}
	}
	return out
}
