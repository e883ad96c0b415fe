package httpapi

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestPageCacheMetrics checks that the page cache counts its hits, misses
// and the entries it drops to make room.
func TestPageCacheMetrics(t *testing.T) {
	e := newEnv(t, func(cfg *Config) { cfg.PageCacheTTL = time.Hour })
	counts := func(listener string) [3]float64 {
		c := e.metrics.cacheCounters(listener)
		return [3]float64{testutil.ToFloat64(c.hits), testutil.ToFloat64(c.misses), testutil.ToFloat64(c.evictions)}
	}
	steps := []struct {
		listener, target string
		want             [3]float64 // hits, misses, evictions of the listener after the request
	}{
		{onAPI, "/api/v1/files?limit=5", [3]float64{0, 1, 0}},
		{onAPI, "/api/v1/files?limit=5", [3]float64{1, 1, 0}},
		{onAPI, "/api/v1/files?limit=05", [3]float64{2, 1, 0}}, // the same page
		{onAPI, "/api/v1/files?limit=6", [3]float64{2, 2, 0}},
		{onEdge, "/api/v1/regions", [3]float64{0, 1, 0}},
		{onEdge, "/api/v1/assets?limit=bad", [3]float64{0, 1, 0}}, // refused before the cache
	}
	for _, step := range steps {
		e.get(t, step.listener, step.target)
		if got := counts(step.listener); got != step.want {
			t.Errorf("after %s: hits, misses, evictions = %v, want %v", step.target, got, step.want)
		}
	}

	// A cache of two pages drops the least recently used for a third.
	cfg := Config{Store: e.store, Cursors: e.cursors, Project: DefaultProject, StoreTimeout: time.Minute}
	c := newPageCacheOf(2, time.Hour, e.metrics.cacheCounters("small"))
	h := c.handler(filesRequest(cfg))
	for _, step := range []struct {
		target string
		want   [3]float64
	}{
		{"/api/v1/files?limit=1", [3]float64{0, 1, 0}},
		{"/api/v1/files?limit=2", [3]float64{0, 2, 0}},
		{"/api/v1/files?limit=3", [3]float64{0, 3, 1}}, // limit=1 makes room
		{"/api/v1/files?limit=3", [3]float64{1, 3, 1}},
		{"/api/v1/files?limit=1", [3]float64{1, 4, 2}}, // rendered again; limit=2 makes room
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", step.target, nil))
		if rec.Code != 200 {
			t.Fatalf("%s: %d %s", step.target, rec.Code, rec.Body)
		}
		if got := counts("small"); got != step.want {
			t.Errorf("small cache, after %s: hits, misses, evictions = %v, want %v", step.target, got, step.want)
		}
	}
}
