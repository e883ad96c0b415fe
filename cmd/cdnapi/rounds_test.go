package main

import (
	"bufio"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// storageProbes is the line prefix of the count of Storage probes in the
// admin listener's metrics: one a status evaluation round.
const storageProbes = `cdnapi_probe_duration_seconds_count{component="Storage"} `

// countRounds counts the status evaluation rounds of the serve whose admin
// listener is at admin, by its probes of Storage, which every round makes,
// from now until the returned function is called, which returns the count.
//
// A bound in rounds holds on a loaded machine where a bound in seconds
// does not: load stretches the rounds, not their number.
func countRounds(t *testing.T, admin string) (stop func() int) {
	t.Helper()
	start := probesOfStorage(t, admin)
	return func() int { return probesOfStorage(t, admin) - start }
}

// probesOfStorage reads the count of Storage probes from admin's metrics.
func probesOfStorage(t *testing.T, admin string) int {
	t.Helper()
	res, err := http.Get(admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), storageProbes); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s%s: %v", storageProbes, v, err)
			}
			return int(n)
		}
	}
	t.Fatalf("no %s in %s/metrics", strings.TrimSpace(storageProbes), admin)
	return 0
}
