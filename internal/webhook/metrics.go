package webhook

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cdnapi/cdnapi"
)

// Metrics are the deliveries' Prometheus metrics.
type Metrics struct {
	attempts *prometheus.CounterVec

	mu    sync.Mutex
	stats cdnapi.OutboxStats
}

// NewMetrics registers the metrics on reg:
//
//	cdnapi_webhook_deliveries_total{result}     attempts by result
//	cdnapi_webhook_pending                      deliveries waiting, every webhook
//	cdnapi_webhook_oldest_pending_age_seconds   age of the oldest of them; 0 when none
//
// The two gauges are read from the store about once a second by Run.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "cdnapi_webhook_deliveries_total",
		Help: "Webhook delivery attempts, by result: delivered (2xx), failed (retried), gone (410: webhook removed), gave_up.",
	}, []string{"result"})}
	for _, r := range cdnapi.DeliveryResults {
		m.attempts.WithLabelValues(string(r))
	}
	reg.MustRegister(m.attempts, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "cdnapi_webhook_pending",
		Help: "Webhook deliveries waiting to succeed, over every webhook.",
	}, func() float64 {
		m.mu.Lock()
		defer m.mu.Unlock()
		return float64(m.stats.Pending)
	}), prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "cdnapi_webhook_oldest_pending_age_seconds",
		Help: "Age of the oldest webhook delivery waiting; 0 when none waits.",
	}, func() float64 {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.stats.OldestQueued.IsZero() {
			return 0
		}
		return time.Since(m.stats.OldestQueued).Seconds()
	}))
	return m
}

func (m *Metrics) attempted(r cdnapi.DeliveryResult) {
	if m != nil {
		m.attempts.WithLabelValues(string(r)).Inc()
	}
}

func (m *Metrics) setStats(st cdnapi.OutboxStats) {
	m.mu.Lock()
	m.stats = st
	m.mu.Unlock()
}
