package follow

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cdnapi/cdnapi"
)

// Metrics are a follower's Prometheus metrics. A nil *Metrics records
// nothing.
type Metrics struct {
	linesRead   prometheus.Counter
	lines       *prometheus.CounterVec
	assets      *prometheus.CounterVec
	skipped     *prometheus.CounterVec
	batches     prometheus.Counter
	storeErrors prometheus.Counter
	commitTime  prometheus.Histogram
	delay       prometheus.Histogram
	position    *prometheus.GaugeVec

	mu     sync.Mutex
	newest time.Time // of the last commit
	now    func() time.Time
}

// NewMetrics registers a follower's metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		linesRead: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cdnapi_follow_lines_read_total", Help: "Lines read from the log, committed or not yet."}),
		lines: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cdnapi_follow_lines_total",
			Help: "Lines committed, by result: listed (an asset), skipped (valid, not a listed request) or rejected (invalid)."},
			[]string{"result"}),
		// By region and cache status, so that a dashboard shows each
		// region's hit ratio from what its edge served, not from a query
		// of the assets table.
		assets: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cdnapi_follow_assets_total",
			Help: "Assets committed, by region and cache status (HIT, MISS, …; \"\" for a request that did not go through the cache)."},
			[]string{"region", "cache_status"}),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cdnapi_follow_lines_skipped_total",
			Help: "Lines committed as skipped, by reason: not_listed (a valid request the assets list does not show) or nginx_refused (a request nginx answered 4xx before the edge's server ran, such as 400 or 414: no region)."},
			[]string{"reason"}),
		batches: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cdnapi_follow_batches_total", Help: "Batches committed."}),
		storeErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cdnapi_follow_store_errors_total", Help: "Store calls that failed and were retried."}),
		commitTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "cdnapi_follow_commit_duration_seconds", Help: "Time to commit a batch.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14)}),
		delay: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "cdnapi_follow_delay_seconds",
			Help:    "From nginx logging a request to its asset being committed, per listed line.",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}}),
		position: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "cdnapi_follow_position_bytes",
			Help: "The committed offset in the log file that is read, by its path and inode."},
			[]string{"path", "inode"}),
		now: time.Now,
	}
	lag := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "cdnapi_follow_lag_seconds",
		Help: "Age of the newest request committed: how far behind the API is, while the edge is busy.",
	}, m.lag)
	for _, r := range []string{"listed", "skipped", "rejected"} {
		m.lines.WithLabelValues(r)
	}
	for _, r := range []string{"not_listed", "nginx_refused"} {
		m.skipped.WithLabelValues(r)
	}
	reg.MustRegister(m.linesRead, m.lines, m.assets, m.skipped, m.batches, m.storeErrors, m.commitTime, m.delay, m.position, lag)
	return m
}

func (m *Metrics) lag() float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.newest.IsZero() {
		return 0
	}
	return m.now().Sub(m.newest).Seconds()
}

func (m *Metrics) lineRead() {
	if m != nil {
		m.linesRead.Inc()
	}
}

func (m *Metrics) storeFailed() {
	if m != nil {
		m.storeErrors.Inc()
	}
}

// setPosition shows p as the committed position.
func (m *Metrics) setPosition(p cdnapi.LogPosition) {
	if m == nil || p.Inode == 0 {
		return
	}
	m.position.Reset()
	m.position.WithLabelValues(p.Path, strconv.FormatUint(p.Inode, 10)).Set(float64(p.Offset))
	m.mu.Lock()
	m.newest = p.NewestAt
	m.mu.Unlock()
}

// committed records a batch committed at now, taking took, that moved the
// position to p.
func (m *Metrics) committed(b *batch, p cdnapi.LogPosition, took time.Duration, now time.Time) {
	if m == nil {
		return
	}
	listed := int64(len(b.assets))
	m.lines.WithLabelValues("listed").Add(float64(listed))
	m.lines.WithLabelValues("skipped").Add(float64(b.skipped))
	m.skipped.WithLabelValues("not_listed").Add(float64(b.skipped - b.refused))
	m.skipped.WithLabelValues("nginx_refused").Add(float64(b.refused))
	m.lines.WithLabelValues("rejected").Add(float64(len(b.rejects)))
	for _, a := range b.assets {
		m.assets.WithLabelValues(a.Region, string(a.CacheStatus)).Inc()
	}
	m.batches.Inc()
	m.commitTime.Observe(took.Seconds())
	for _, at := range b.at {
		m.delay.Observe(now.Sub(at).Seconds())
	}
	m.setPosition(p)
}
