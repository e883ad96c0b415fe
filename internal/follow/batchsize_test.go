package follow_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/cdnapi/cdnapi/internal/follow"
	"github.com/cdnapi/cdnapi/internal/teststore"
)

// TestBatchLinesBound: a follower behind by 1,050 lines commits them in
// batches of at most --batch-lines (100 here): at least 11 commits, each
// line once.
func TestBatchLinesBound(t *testing.T) {
	st := newStore(t, teststore.Engines[0])
	e := newEdge(t, t.TempDir())
	e.log(1050)
	reg := prometheus.NewRegistry()
	cfg := fastConfig(e.path)
	cfg.BatchLines = 100
	cfg.BatchInterval = time.Hour // only the line bound cuts a batch
	cfg.StopAtEnd = true
	cfg.Metrics = follow.NewMetrics(reg)
	// No deadline but the test binary's: a backfill on a loaded machine
	// may take minutes, and Run stopped by its context returns nil with
	// the log half read.
	if err := follow.Run(t.Context(), st, cfg); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, assetIDs(t, st), 1050)
	n, err := testutil.GatherAndCount(reg, "cdnapi_follow_batches_total")
	if err != nil || n != 1 {
		t.Fatalf("cdnapi_follow_batches_total: %d series, %v", n, err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "cdnapi_follow_batches_total" {
			if got := mf.GetMetric()[0].GetCounter().GetValue(); got < 11 {
				t.Errorf("%v batches for 1,050 lines at --batch-lines 100; want at least 11", got)
			}
		}
	}
}

// TestAssetsByRegionAndCacheStatus: the assets committed are counted by
// region and cache status, from which a dashboard reads each region's hit
// ratio.
func TestAssetsByRegionAndCacheStatus(t *testing.T) {
	st := newStore(t, teststore.Engines[0])
	e := newEdge(t, t.TempDir())
	e.log(11) // MISS, HIT, MISS, … in FRA1
	reg := prometheus.NewRegistry()
	cfg := fastConfig(e.path)
	cfg.StopAtEnd = true
	cfg.Metrics = follow.NewMetrics(reg)
	// No deadline but the test binary's: a backfill on a loaded machine
	// may take minutes, and Run stopped by its context returns nil with
	// the log half read.
	if err := follow.Run(t.Context(), st, cfg); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "cdnapi_follow_assets_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			var region, cache string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "region":
					region = l.GetValue()
				case "cache_status":
					cache = l.GetValue()
				}
			}
			got[region+" "+cache] = m.GetCounter().GetValue()
		}
	}
	if want := map[string]float64{"FRA1 MISS": 6, "FRA1 HIT": 5}; len(got) != len(want) || got["FRA1 MISS"] != 6 || got["FRA1 HIT"] != 5 {
		t.Errorf("cdnapi_follow_assets_total %v, want %v", got, want)
	}
}
