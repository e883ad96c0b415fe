package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/health"
)

// probedStore is the store with its regions read through the evaluator's
// probed statuses, as serve wires it.
type probedStore struct {
	cdnapi.FileReader
	cdnapi.AssetReader
	cdnapi.RegionReader
}

// TestProbedRegionsPassThePageCache: with caches kept for an hour, a change
// of a probed region shows at once in GET /api/v1/regions and on /status,
// and an operator's status in the store still wins over the probe.
func TestProbedRegionsPassThePageCache(t *testing.T) {
	var failing atomic.Bool
	edge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if failing.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(edge.Close)
	var probes *health.Evaluator
	e := newEnv(t, func(cfg *Config) {
		store := cfg.Store.(interface {
			health.Store
			cdnapi.ListReader
		})
		probes = health.New(store, health.Config{
			// SYD1 is under_maintenance in the fixtures: an operator's.
			RegionProbes: []health.RegionProbe{{Code: "FRA1", URL: edge.URL}, {Code: "SYD1", URL: edge.URL}},
			Regions:      store,
			PingTimeout:  10 * time.Second, SlowThreshold: 10 * time.Second,
		})
		probes.Evaluate(context.Background())
		cfg.Store = probedStore{store, store, probes.ProbedRegions(store)}
		cfg.RegionsVersion = probes.RegionsVersion
		cfg.PageCacheTTL = time.Hour
	})
	want := func(what string, fra, syd cdnapi.Status) {
		t.Helper()
		_, body := e.get(t, onEdge, "/api/v1/regions")
		for code, s := range map[string]cdnapi.Status{"FRA1": fra, "SYD1": syd} {
			if !strings.Contains(string(body), `"code":"`+code+`",`) ||
				!strings.Contains(string(body), code+`","name":`) {
				t.Fatalf("%s: no %s in %s", what, code, body)
			}
			i := strings.Index(string(body), `"code":"`+code+`"`)
			j := strings.Index(string(body)[i:], "}")
			if item := string(body)[i : i+j]; !strings.Contains(item, `"status":"`+string(s)+`"`) {
				t.Errorf("%s: regions list has %s, want status %s", what, item, s)
			}
		}
		page := getPage(t, e, "/status", "no-store")
		row := `FRA1</span></span><span class="t-` + string(fra) + `">`
		if !strings.Contains(page, row) {
			t.Errorf("%s: /status has no %s", what, row)
		}
	}
	want("answering", cdnapi.StatusOperational, cdnapi.StatusUnderMaintenance)
	failing.Store(true)
	probes.Evaluate(context.Background())
	probes.Evaluate(context.Background())
	want("failing twice", cdnapi.StatusMajorOutage, cdnapi.StatusUnderMaintenance)
	failing.Store(false)
	for range health.DampWindow {
		probes.Evaluate(context.Background())
	}
	want("answering again", cdnapi.StatusOperational, cdnapi.StatusUnderMaintenance)
}
