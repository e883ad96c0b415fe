package health

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/teststore"
)

// TestMetrics checks that the probe metrics and the component status gauge
// follow what the evaluator measures: a failing health check counts a
// failure and shows its component down; then a stopped store raises
// Storage's failures and flips its gauge from operational to major_outage.
func TestMetrics(t *testing.T) {
	store := teststore.SQLite(t)
	m := NewMetrics(prometheus.NewRegistry())
	e := New(store, Config{Now: fixedClock, Metrics: m,
		Upload: httpProbe(healthServer(t, checkOK, 0)), VirusScanning: httpProbe(healthServer(t, check500, 0))})

	steps := []struct {
		name         string
		stop         bool
		wantFailures map[string]float64
		wantStatus   map[string]cdnapi.Status
	}{
		{"store up", false,
			map[string]float64{cdnapi.ComponentStorage: 0, cdnapi.ComponentUpload: 0, cdnapi.ComponentVirusScanning: 1},
			map[string]cdnapi.Status{cdnapi.ComponentStorage: cdnapi.StatusOperational, cdnapi.ComponentUpload: cdnapi.StatusOperational,
				cdnapi.ComponentVirusScanning: cdnapi.StatusMajorOutage, cdnapi.ComponentAPI: cdnapi.StatusOperational}},
		{"store stopped", true,
			map[string]float64{cdnapi.ComponentStorage: 1, cdnapi.ComponentUpload: 0, cdnapi.ComponentVirusScanning: 2},
			map[string]cdnapi.Status{cdnapi.ComponentStorage: cdnapi.StatusMajorOutage, cdnapi.ComponentUpload: cdnapi.StatusOperational}},
	}
	for i, step := range steps {
		if step.stop {
			store.Close()
		}
		e.Evaluate(context.Background())
		for component, want := range step.wantFailures {
			if got := testutil.ToFloat64(m.failures.WithLabelValues(component)); got != want {
				t.Errorf("%s: probe failures of %s = %v, want %v", step.name, component, got, want)
			}
		}
		// Every round probed the three components that have probes.
		if got := testutil.CollectAndCount(m.duration); got != 3 {
			t.Errorf("%s: %d probe latency series, want 3", step.name, got)
		}
		gauges := statusGauges(t, e.StatusCollector())
		for component, want := range step.wantStatus {
			for _, s := range cdnapi.Statuses {
				wantValue := 0.0
				if s == want {
					wantValue = 1
				}
				if got := gauges[component][s]; got != wantValue {
					t.Errorf("%s: cdnapi_component_status{component=%q,status=%q} = %v, want %v", step.name, component, s, got, wantValue)
				}
			}
		}
		if i == 0 && len(gauges) != len(cdnapi.Components) {
			t.Errorf("gauges of %d components, want %d", len(gauges), len(cdnapi.Components))
		}
	}
}

// statusGauges collects c's gauges by component and status.
func statusGauges(t *testing.T, c prometheus.Collector) map[string]map[cdnapi.Status]float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 64)
	c.Collect(ch)
	close(ch)
	out := map[string]map[cdnapi.Status]float64{}
	for metric := range ch {
		var d dto.Metric
		if err := metric.Write(&d); err != nil {
			t.Fatal(err)
		}
		labels := map[string]string{}
		for _, l := range d.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if out[labels["component"]] == nil {
			out[labels["component"]] = map[cdnapi.Status]float64{}
		}
		out[labels["component"]][cdnapi.Status(labels["status"])] = d.GetGauge().GetValue()
	}
	return out
}

// TestRegionStatusMetrics: cdnapi_region_status shows each stored region
// with the status it is served with: a probed region's damped status
// once its edge fails two rounds, the store's for a region with no probe.
// The probes' failure counters exist from the first round, at 0.
func TestRegionStatusMetrics(t *testing.T) {
	store := teststore.SQLite(t)
	putRegions(t, store, frankfurt, ashburn)
	fra := newEdge(t)
	m := NewMetrics(prometheus.NewRegistry())
	e := New(store, Config{
		RegionProbes:  []RegionProbe{{Code: "FRA1", URL: fra.url()}},
		Regions:       store,
		PingTimeout:   5 * time.Second,
		SlowThreshold: time.Hour,
		Metrics:       m,
	})
	if n := testutil.CollectAndCount(m.failures, "cdnapi_probe_failures_total"); n != 2 {
		t.Fatalf("%d probe failure series before a round, want 2 (Storage, region:FRA1)", n)
	}
	for _, c := range []string{cdnapi.ComponentStorage, "region:FRA1"} {
		if got := testutil.ToFloat64(m.failures.WithLabelValues(c)); got != 0 {
			t.Errorf("probe failures of %s = %v before a round, want 0", c, got)
		}
	}
	want := func(what string, statuses map[string]cdnapi.Status) {
		t.Helper()
		got := regionGauges(t, e.StatusCollector())
		if len(got) != len(statuses) {
			t.Errorf("%s: gauges of regions %v, want %d regions", what, got, len(statuses))
		}
		for code, want := range statuses {
			for _, s := range cdnapi.Statuses {
				v := 0.0
				if s == want {
					v = 1
				}
				if got[code][s] != v {
					t.Errorf("%s: cdnapi_region_status{region=%q,status=%q} = %v, want %v", what, code, s, got[code][s], v)
				}
			}
		}
	}
	e.Evaluate(t.Context())
	want("answering", map[string]cdnapi.Status{"FRA1": cdnapi.StatusOperational, "IAD1": cdnapi.StatusOperational})
	fra.stop()
	e.Evaluate(t.Context())
	e.Evaluate(t.Context())
	want("stopped two rounds", map[string]cdnapi.Status{"FRA1": cdnapi.StatusMajorOutage, "IAD1": cdnapi.StatusOperational})
}

// regionGauges collects c's region gauges by region and status.
func regionGauges(t *testing.T, c prometheus.Collector) map[string]map[cdnapi.Status]float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 256)
	c.Collect(ch)
	close(ch)
	out := map[string]map[cdnapi.Status]float64{}
	for metric := range ch {
		var d dto.Metric
		if err := metric.Write(&d); err != nil {
			t.Fatal(err)
		}
		labels := map[string]string{}
		for _, l := range d.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["region"] == "" {
			continue
		}
		if out[labels["region"]] == nil {
			out[labels["region"]] = map[cdnapi.Status]float64{}
		}
		out[labels["region"]][cdnapi.Status(labels["status"])] = d.GetGauge().GetValue()
	}
	return out
}

// TestMetricsNotDeployed: a component the deployment does not have is not
// probed, so it counts no failure and times no probe, round after round.
func TestMetricsNotDeployed(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry())
	e := New(teststore.SQLite(t), Config{Now: fixedClock, Metrics: m})
	for range 3 {
		e.Evaluate(context.Background())
	}
	for _, c := range []string{cdnapi.ComponentUpload, cdnapi.ComponentVirusScanning} {
		if got := testutil.ToFloat64(m.failures.WithLabelValues(c)); got != 0 {
			t.Errorf("probe failures of %s, not deployed = %v, want 0", c, got)
		}
	}
	if got := testutil.CollectAndCount(m.duration); got != 1 {
		t.Errorf("%d probe latency series, want 1 (Storage's)", got)
	}
}
