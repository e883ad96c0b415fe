// Package storemetrics measures a store from the outside: the latency of
// every call by operation and engine, the errors by kind, the rows that
// pruning deleted, and the connections of the engine's pools. It decorates
// the store interfaces, so that both engines are measured the same way and
// neither knows about Prometheus.
package storemetrics

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cdnapi/cdnapi"
)

// Metrics are the Prometheus metrics of store calls.
type Metrics struct {
	calls   *prometheus.HistogramVec
	errors  *prometheus.CounterVec
	deleted *prometheus.CounterVec
}

// NewMetrics returns Metrics registered with reg, which must not hold them
// yet.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		calls: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "cdnapi",
			Subsystem: "store",
			Name:      "call_duration_seconds",
			Help:      "Time of a call to the store, by engine and operation, failed calls included.",
			// From a page of SQLite's cache (tens of microseconds) to the
			// seconds of a store timeout.
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"engine", "operation"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "cdnapi",
			Subsystem: "store",
			Name:      "errors_total",
			Help: "Store calls that failed, by engine, operation and kind: timeout (a deadline, statement_timeout or busy_timeout passed), " +
				"canceled (the caller went away), rejected (the store refused the input, or a log position another follower had moved) or unavailable (anything else: " +
				"the database is down, closed or broken). A record that does not exist is not an error.",
		}, []string{"engine", "operation", "kind"}),
		deleted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "cdnapi",
			Subsystem: "prune",
			Name:      "deleted_rows_total",
			Help:      "Rows deleted by pruning, by what they were: assets or status_history.",
		}, []string{"engine", "table"}),
	}
	if reg != nil {
		reg.MustRegister(m.calls, m.errors, m.deleted)
	}
	return m
}

// The kinds of errors_total.
const (
	KindTimeout     = "timeout"
	KindCanceled    = "canceled"
	KindRejected    = "rejected"
	KindUnavailable = "unavailable"
)

// errorKinds are every kind of errors_total.
var errorKinds = []string{KindTimeout, KindCanceled, KindRejected, KindUnavailable}

// ErrorKind returns the kind of a store error, or "" for nil, for
// ErrNotFound and for ErrDegraded, which are answers rather than failures.
func ErrorKind(err error) string {
	switch {
	case err == nil || errors.Is(err, cdnapi.ErrNotFound) || errors.Is(err, cdnapi.ErrDegraded):
		return ""
	case errors.Is(err, context.DeadlineExceeded):
		return KindTimeout
	case errors.Is(err, context.Canceled):
		return KindCanceled
	case errors.Is(err, cdnapi.ErrPositionMoved):
		// Another follower of the stream committed first: the store
		// answered, and refused the move, as it should.
		return KindRejected
	}
	// The engines' own time limits. PostgreSQL's statement_timeout ends a
	// statement with SQLSTATE 57014 (query_canceled); SQLite gives up on a
	// lock after its busy_timeout with SQLITE_BUSY (5, in the low byte of
	// extended codes). The errors are recognised by their methods, so that
	// this package imports neither driver.
	if e, ok := errors.AsType[interface {
		error
		SQLState() string
	}](err); ok && e.SQLState() == "57014" {
		return KindTimeout
	}
	if e, ok := errors.AsType[interface {
		error
		Code() int
	}](err); ok && e.Code()&0xff == 5 {
		return KindTimeout
	}
	if e, ok := errors.AsType[*cdnapi.Error](err); ok && e.Code != cdnapi.CodeNotFound {
		return KindRejected
	} else if ok {
		return ""
	}
	return KindUnavailable
}
