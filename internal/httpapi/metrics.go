package httpapi

import (
	"errors"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the Prometheus metrics of the HTTP listeners. A nil *Metrics
// records nothing.
type Metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	// Streams (Server-Sent Events) last as long as the client stays, up to
	// hours: in duration they would land in +Inf and drag every quantile,
	// so they have metrics of their own.
	streamsOpen    *prometheus.GaugeVec
	streamDuration *prometheus.HistogramVec
	cache          [3]*prometheus.CounterVec // the hits, misses and evictions of the page caches
}

// NewMetrics returns Metrics registered with reg. It takes the registry as a
// dependency rather than using the global one, so that tests and several
// servers in one process do not collide. Registering twice with the same reg
// reuses the collectors already there.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "cdnapi",
		Subsystem: "http",
		Name:      "requests_total",
		Help:      "HTTP requests answered, by listener, route pattern and status code.",
	}, []string{"listener", "route", "code"})
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "cdnapi",
		Subsystem: "http",
		Name:      "request_duration_seconds",
		Help:      "Time to answer an HTTP request, by listener and route pattern.",
		// Chosen from the measured distribution (docs/operating.md, "Metrics"): a page
		// from the page cache answers in a median 17 to 19µs (p90 38 to
		// 83µs; the status document and 404s in 2 to 8µs), a page the
		// cache misses in 25µs to 2ms, and a busy machine's tail reaches
		// tens of milliseconds. The old lowest bucket, 0.5ms, held 99% of
		// all answers, so every quantile up to p99 read as "under 0.5ms".
		// From 10µs up, 1-2.5-5 per decade, to the seconds of a store
		// timeout.
		Buckets: []float64{.00001, .000025, .00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
	}, []string{"listener", "route"})
	streamsOpen := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "cdnapi",
		Subsystem: "http",
		Name:      "streams_open",
		Help:      "Server-Sent Events streams open now, by listener and route pattern.",
	}, []string{"listener", "route"})
	streamDuration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "cdnapi",
		Subsystem: "http",
		Name:      "stream_duration_seconds",
		Help:      "How long a Server-Sent Events stream stayed open, by listener and route pattern; streams are not in request_duration_seconds.",
		// From a page closed at once to a status page left open for hours.
		Buckets: []float64{1, 10, 60, 300, 900, 1800, 3600, 3 * 3600, 12 * 3600},
	}, []string{"listener", "route"})
	m := &Metrics{
		requests:       register(reg, requests),
		duration:       register(reg, duration),
		streamsOpen:    register(reg, streamsOpen),
		streamDuration: register(reg, streamDuration),
	}
	// The one stream there is, served by the API listener: at 0 from the
	// start.
	m.streamsOpen.WithLabelValues("api", pathStatusStream)
	m.streamDuration.WithLabelValues("api", pathStatusStream)
	for i, c := range []struct{ name, help string }{
		{"hits_total", "List requests answered from the page cache, by listener."},
		{"misses_total", "List requests the page cache could not answer, which rendered the page or waited for its render, by listener."},
		{"evictions_total", "Pages dropped from the page cache to make room for another, before their time was up, by listener."},
	} {
		m.cache[i] = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "cdnapi", Subsystem: "page_cache", Name: c.name, Help: c.help,
		}, []string{"listener"}))
	}
	return m
}

// cacheCounters are the counters of one listener's page cache.
type cacheCounters struct{ hits, misses, evictions prometheus.Counter }

// cacheCounters returns the page-cache counters of listener, which count
// nothing anyone sees when m is nil.
func (m *Metrics) cacheCounters(listener string) cacheCounters {
	if m == nil {
		return cacheCounters{prometheus.NewCounter(prometheus.CounterOpts{Name: "unused"}),
			prometheus.NewCounter(prometheus.CounterOpts{Name: "unused"}),
			prometheus.NewCounter(prometheus.CounterOpts{Name: "unused"})}
	}
	return cacheCounters{m.cache[0].WithLabelValues(listener), m.cache[1].WithLabelValues(listener),
		m.cache[2].WithLabelValues(listener)}
}

// register registers c with reg and returns it, or the equal collector reg
// already holds. A nil reg leaves c unregistered.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if reg == nil {
		return c
	}
	if err := reg.Register(c); err != nil {
		if are, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		panic(err) // a conflicting metric of the same name: a programming error
	}
	return c
}

// serverErrors are the 5xx status codes the error map answers with
// (errors.go): internal errors and storage_unavailable.
var serverErrors = []string{"500", "503"}

// knownRoute makes the counters of the server errors of route exist from
// the start, at 0, so that an alert on the share of 5xx needs no
// `or vector(0)`.
func (m *Metrics) knownRoute(listener, route string) {
	if m == nil {
		return
	}
	for _, code := range serverErrors {
		m.requests.WithLabelValues(listener, route, code)
	}
}

// streamOpened counts a stream open until observe records its end.
func (m *Metrics) streamOpened(listener, route string) {
	if m != nil {
		m.streamsOpen.WithLabelValues(listener, route).Inc()
	}
}

// observe records one answered request; a stream (see markStream) is
// timed apart from the requests, and no longer counted open.
func (m *Metrics) observe(listener, route string, status int, elapsed time.Duration, stream bool) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(listener, route, strconv.Itoa(status)).Inc()
	if stream {
		m.streamsOpen.WithLabelValues(listener, route).Dec()
		m.streamDuration.WithLabelValues(listener, route).Observe(elapsed.Seconds())
		return
	}
	m.duration.WithLabelValues(listener, route).Observe(elapsed.Seconds())
}
