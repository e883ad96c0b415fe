package edgelog

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cdnapi/cdnapi"
)

// Metrics are a Receiver's Prometheus metrics, by the region of the edge
// key that sent each batch, as the follower's are for its log. A nil
// *Metrics records nothing.
type Metrics struct {
	lines       *prometheus.CounterVec
	assets      *prometheus.CounterVec
	batches     *prometheus.CounterVec
	storeErrors *prometheus.CounterVec
	commitTime  *prometheus.HistogramVec
	delay       *prometheus.HistogramVec
}

// NewMetrics registers a Receiver's metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		lines: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cdnapi_edgelog_lines_total",
			Help: "Lines of committed batches by the sending key's region and result: taken (an asset), skipped (valid, not a listed request), rejected (invalid) or other_region (of another region than the key's, rejected too)."},
			[]string{"region", "result"}),
		// As the follower's cdnapi_follow_assets_total, so that the
		// dashboard's hit ratio by region counts the edges that ship
		// their lines here as well as those followed on their machine.
		assets: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cdnapi_edgelog_assets_total",
			Help: "Assets committed, by the sending key's region and cache status (HIT, MISS, …; \"\" for a request that did not go through the cache)."},
			[]string{"region", "cache_status"}),
		batches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cdnapi_edgelog_batches_total", Help: "Batches committed and acknowledged, by the key's region."},
			[]string{"region"}),
		storeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cdnapi_edgelog_store_errors_total", Help: "Batches the store did not commit, answered 503 for the shipper to send again."},
			[]string{"region"}),
		commitTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "cdnapi_edgelog_commit_duration_seconds", Help: "Time to commit a batch.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14)}, []string{"region"}),
		delay: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "cdnapi_edgelog_delay_seconds",
			Help:    "From nginx logging a request ($msec) to its asset being committed, per taken line: the shipper's batching and buffering included.",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}}, []string{"region"}),
	}
	reg.MustRegister(m.lines, m.assets, m.batches, m.storeErrors, m.commitTime, m.delay)
	return m
}

// results are the values of cdnapi_edgelog_lines_total's result label.
var results = []string{"taken", "skipped", "rejected", "other_region"}

// known makes the counters of region exist, at 0.
func (m *Metrics) known(region string) {
	if m == nil {
		return
	}
	for _, r := range results {
		m.lines.WithLabelValues(region, r)
	}
	m.batches.WithLabelValues(region)
	m.storeErrors.WithLabelValues(region)
}

func (m *Metrics) storeFailed(region string) {
	if m != nil {
		m.storeErrors.WithLabelValues(region).Inc()
	}
}

// committed records a batch of region committed at now, taking took, whose
// taken lines are assets, logged at the times at.
func (m *Metrics) committed(region string, c Counts, assets []cdnapi.Asset, took time.Duration, at []time.Time, now time.Time) {
	if m == nil {
		return
	}
	m.lines.WithLabelValues(region, "taken").Add(float64(c.Taken))
	m.lines.WithLabelValues(region, "skipped").Add(float64(c.Skipped))
	m.lines.WithLabelValues(region, "rejected").Add(float64(c.Rejected - c.OtherRegion))
	m.lines.WithLabelValues(region, "other_region").Add(float64(c.OtherRegion))
	for _, a := range assets {
		m.assets.WithLabelValues(region, string(a.CacheStatus)).Inc()
	}
	m.batches.WithLabelValues(region).Inc()
	m.commitTime.WithLabelValues(region).Observe(took.Seconds())
	d := m.delay.WithLabelValues(region)
	for _, t := range at {
		d.Observe(now.Sub(t).Seconds())
	}
}
