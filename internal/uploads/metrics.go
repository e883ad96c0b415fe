package uploads

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cdnapi/cdnapi/internal/clamd"
)

// Metrics are a Gate's Prometheus metrics. A nil *Metrics records nothing.
type Metrics struct {
	scans    *prometheus.CounterVec
	scanTime prometheus.Histogram
	promotes prometheus.Counter
}

// NewMetrics registers a Gate's metrics with reg. Every label value the
// code knows starts at 0, so that alerts need no "or vector(0)".
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		scans: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cdnapi_uploads_scans_total",
			Help: "Uploads scanned, by result: clean, infected, timeout (no verdict within the scan timeout) or error (the scan could not finish otherwise); after a timeout or an error the file waits in staging."},
			[]string{"result"}),
		scanTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "cdnapi_uploads_scan_duration_seconds", Help: "Time clamd took to scan an upload.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}),
		promotes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cdnapi_uploads_promoted_total", Help: "Uploads scanned clean and moved into the origin."}),
	}
	for _, r := range []string{"clean", "infected", "timeout", "error"} {
		m.scans.WithLabelValues(r)
	}
	reg.MustRegister(m.scans, m.scanTime, m.promotes)
	return m
}

func (m *Metrics) scanned(res clamd.Result, err error, timedOut bool, took time.Duration) {
	if m == nil {
		return
	}
	switch {
	case timedOut:
		m.scans.WithLabelValues("timeout").Inc()
		return
	case err != nil:
		m.scans.WithLabelValues("error").Inc()
		return
	case res.Infected:
		m.scans.WithLabelValues("infected").Inc()
	default:
		m.scans.WithLabelValues("clean").Inc()
	}
	m.scanTime.Observe(took.Seconds())
}

func (m *Metrics) promoted() {
	if m != nil {
		m.promotes.Inc()
	}
}
