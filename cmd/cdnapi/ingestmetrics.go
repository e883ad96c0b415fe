package main

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cdnapi/cdnapi/internal/ingest"
)

// writeIngestMetrics writes what an ingest did to path, in Prometheus's
// text format, for node_exporter's textfile collector: an ingest is a batch
// job that no one scrapes. The file is replaced atomically, so it always
// describes one whole run: the last one that wrote it.
func writeIngestMetrics(path string, kind ingest.Kind, res ingest.Result, runErr error, now time.Time) error {
	reg := prometheus.NewRegistry()
	rows := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "cdnapi_ingest_rows",
		Help: "Lines of the last ingest, by kind and result: accepted (written) or rejected (invalid).",
	}, []string{"kind", "result"})
	success := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "cdnapi_ingest_last_run_success",
		Help: "1 if the last ingest committed, 0 if it wrote nothing.",
	}, []string{"kind"})
	at := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "cdnapi_ingest_last_run_timestamp_seconds",
		Help: "When the last ingest ended, in seconds since the Unix epoch.",
	}, []string{"kind"})
	reg.MustRegister(rows, success, at)

	accepted, ok := float64(res.Written), 1.0
	if runErr != nil {
		accepted, ok = 0, 0 // one transaction: a failed ingest wrote nothing
	}
	rows.WithLabelValues(string(kind), "accepted").Set(accepted)
	rows.WithLabelValues(string(kind), "rejected").Set(float64(res.Invalid))
	success.WithLabelValues(string(kind)).Set(ok)
	at.WithLabelValues(string(kind)).Set(float64(now.Unix()))
	if err := prometheus.WriteToTextfile(path, reg); err != nil {
		return fmt.Errorf("ingest: --metrics-file: %w", err)
	}
	return nil
}
