package storemetrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cdnapi/cdnapi"
)

// PoolCollector reports the pools of a store at every scrape.
type PoolCollector struct {
	stats func() []cdnapi.PoolStats

	conns, max, waits *prometheus.Desc
}

// NewPoolCollector returns a collector of the pools that stats reports,
// under the engine's name. stats is called at every scrape, so it must be
// cheap and safe to call concurrently.
func NewPoolCollector(engine string, stats func() []cdnapi.PoolStats) *PoolCollector {
	labels := prometheus.Labels{"engine": engine}
	return &PoolCollector{
		stats: stats,
		conns: prometheus.NewDesc("cdnapi_store_pool_connections",
			"Open connections of a store's pool, by state: in_use or idle.", []string{"pool", "state"}, labels),
		max: prometheus.NewDesc("cdnapi_store_pool_max_connections",
			"The most connections a store's pool opens.", []string{"pool"}, labels),
		waits: prometheus.NewDesc("cdnapi_store_pool_waits_total",
			"Acquisitions of a connection that had to wait because every one was in use.", []string{"pool"}, labels),
	}
}

// Describe implements prometheus.Collector.
func (c *PoolCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.conns
	ch <- c.max
	ch <- c.waits
}

// Collect implements prometheus.Collector.
func (c *PoolCollector) Collect(ch chan<- prometheus.Metric) {
	for _, p := range c.stats() {
		ch <- prometheus.MustNewConstMetric(c.conns, prometheus.GaugeValue, float64(p.InUse), p.Pool, "in_use")
		ch <- prometheus.MustNewConstMetric(c.conns, prometheus.GaugeValue, float64(p.Idle), p.Pool, "idle")
		ch <- prometheus.MustNewConstMetric(c.max, prometheus.GaugeValue, float64(p.Max), p.Pool)
		ch <- prometheus.MustNewConstMetric(c.waits, prometheus.CounterValue, float64(p.Waits), p.Pool)
	}
}

// walCollector reports the size of an engine's write-ahead log and its
// limit at every scrape.
type walCollector struct {
	wal          func() (bytes, limit int64)
	bytes, limit *prometheus.Desc
}

// WALReporter is an engine that keeps a write-ahead log of its own to a
// limit: SQLite.
type WALReporter interface {
	WAL() (bytes, limit int64)
}

func newWALCollector(engine string, wal func() (int64, int64)) *walCollector {
	labels := prometheus.Labels{"engine": engine}
	return &walCollector{wal: wal,
		bytes: prometheus.NewDesc("cdnapi_store_wal_bytes",
			"Size of the store's write-ahead log file (SQLite's -wal).", nil, labels),
		limit: prometheus.NewDesc("cdnapi_store_wal_limit_bytes",
			"The size over which the store checkpoints its write-ahead log; a WAL that stays over it is not emptied.", nil, labels),
	}
}

// Describe implements prometheus.Collector.
func (c *walCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.bytes
	ch <- c.limit
}

// Collect implements prometheus.Collector.
func (c *walCollector) Collect(ch chan<- prometheus.Metric) {
	b, l := c.wal()
	ch <- prometheus.MustNewConstMetric(c.bytes, prometheus.GaugeValue, float64(b))
	ch <- prometheus.MustNewConstMetric(c.limit, prometheus.GaugeValue, float64(l))
}
