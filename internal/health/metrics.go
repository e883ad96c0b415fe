package health

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cdnapi/cdnapi"
)

// Metrics are the Prometheus metrics of the probes. A nil *Metrics records
// nothing.
type Metrics struct {
	duration *prometheus.HistogramVec
	failures *prometheus.CounterVec
}

// NewMetrics returns Metrics registered with reg, which must not hold them
// yet; pass them in Config.Metrics.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "cdnapi",
			Subsystem: "probe",
			Name:      "duration_seconds",
			Help:      "Time of a component's probe (a store ping, an HTTP health check), failed ones included.",
			// Around the slow threshold (250ms) and up to the ping timeout (1s).
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"component"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "cdnapi",
			Subsystem: "probe",
			Name:      "failures_total",
			Help:      "Probes of a component that failed or did not answer within the ping timeout.",
		}, []string{"component"}),
	}
	if reg != nil {
		reg.MustRegister(m.duration, m.failures)
	}
	return m
}

// known makes the failure counter of component exist, at 0.
func (m *Metrics) known(component string) {
	if m != nil {
		m.failures.WithLabelValues(component)
	}
}

// observe records one probe of component; a measurement of nothing probed
// (no health URL) is not recorded.
func (m *Metrics) observe(component string, ms measurement) {
	// A component not deployed was not probed: no failure, no time.
	if m == nil || ms.notDeployed || (ms.took == 0 && ms.err == nil) {
		return
	}
	m.duration.WithLabelValues(component).Observe(ms.took.Seconds())
	if ms.err != nil {
		m.failures.WithLabelValues(component).Inc()
	}
}

// statusDesc is the gauge of StatusCollector.
var statusDesc = prometheus.NewDesc("cdnapi_component_status",
	"1 for the status a component has in the status document, 0 for each of the others.",
	[]string{"component", "status"}, nil)

// regionStatusDesc is the regions' gauge of StatusCollector.
var regionStatusDesc = prometheus.NewDesc("cdnapi_region_status",
	"1 for the status a region is served with (its probe's, damped, or an operator's), 0 for each of the others.",
	[]string{"region", "status"}, nil)

// statusCollector reports the published status of every component.
type statusCollector struct{ e *Evaluator }

// StatusCollector returns a collector of cdnapi_component_status: one
// series per component and status, 1 for the status the component has
// now and 0 for the others, read from the published document at each
// scrape.
func (e *Evaluator) StatusCollector() prometheus.Collector { return statusCollector{e} }

func (c statusCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- statusDesc
	ch <- regionStatusDesc
}

func (c statusCollector) Collect(ch chan<- prometheus.Metric) {
	for _, comp := range c.e.doc.Load().Components {
		for _, s := range cdnapi.Statuses {
			v := 0.0
			if comp.Status == s {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(statusDesc, prometheus.GaugeValue, v, comp.Name, string(s))
		}
	}
	for code, status := range c.e.regionStatuses() {
		for _, s := range cdnapi.Statuses {
			v := 0.0
			if status == s {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(regionStatusDesc, prometheus.GaugeValue, v, code, string(s))
		}
	}
}

// regionStatuses returns the status each region is served with, by code:
// the store's, unless the region is probed and a round has judged it.
// Before the first round that read the store it is empty.
func (e *Evaluator) regionStatuses() map[string]cdnapi.Status {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[string]cdnapi.Status, len(e.storedRegions))
	for code, r := range e.storedRegions {
		out[code] = r.Status
	}
	for _, r := range e.regions {
		if _, ok := out[r.Code]; ok && r.effective != "" {
			out[r.Code] = r.effective
		}
	}
	return out
}
