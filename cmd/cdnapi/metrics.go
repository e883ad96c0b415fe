package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cdnapi/cdnapi/internal/storemetrics"
)

// measureStore returns st with its calls measured in reg, and registers
// the collector of its connection pools.
func measureStore(st store, reg prometheus.Registerer) store {
	return storemetrics.Measure(st, reg)
}
