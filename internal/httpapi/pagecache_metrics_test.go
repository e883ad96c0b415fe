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
		{onAPI, "/api/v1/files?limit=5", [3]float64{0, 2, 0}}, // admitted on its second miss (see doorkeeper)
		{onAPI, "/api/v1/files?limit=5", [3]float64{1, 2, 0}},
		{onAPI, "/api/v1/files?limit=05", [3]float64{2, 2, 0}}, // the same page
		{onAPI, "/api/v1/files?limit=6", [3]float64{2, 3, 0}},
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

// TestPageCacheSweeps checks that pages past their time leave the cache
// when no one reads it, without counting as evictions, and that the sweep
// then stops until a page is put in again.
func TestPageCacheSweeps(t *testing.T) {
	e := newEnv(t, nil)
	cfg := Config{Store: e.store, Cursors: e.cursors, Project: DefaultProject, StoreTimeout: time.Minute}
	counts := e.metrics.cacheCounters("sweep")
	c := newPageCacheOf(8, 30*time.Millisecond, counts)
	h := c.handler(filesRequest(cfg))
	serve := func(target string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", target, nil))
		if rec.Code != 200 {
			t.Fatalf("%s: %d %s", target, rec.Code, rec.Body)
		}
	}
	for _, target := range []string{"/api/v1/files?limit=1", "/api/v1/files?limit=2", "/api/v1/files?limit=3"} {
		serve(target)
	}
	if n := c.entries.Len(); n != 3 {
		t.Fatalf("%d pages in the cache, want 3", n)
	}
	deadline := time.Now().Add(5 * time.Second)
	for c.entries.Len() > 0 || c.sweeping.Load() {
		if time.Now().After(deadline) {
			t.Fatalf("a second after their time: %d pages left, sweep scheduled %v", c.entries.Len(), c.sweeping.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got := testutil.ToFloat64(counts.evictions); got != 0 {
		t.Errorf("%v evictions, want 0: pages past their time are not evicted", got)
	}
	serve("/api/v1/files?limit=1")
	if n, s := c.entries.Len(), c.sweeping.Load(); n != 1 || !s {
		t.Errorf("after a new page: %d pages, sweep scheduled %v; want 1, true", n, s)
	}
}
