package main

import (
	"math"
	"runtime/debug"
	"testing"
)

// serve sets its soft memory limit unless GOMEMLIMIT is set, which the
// runtime has applied already.
func TestLimitServeMemory(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	for _, tc := range []struct {
		env  string
		want int64
	}{
		{"", serveMemoryLimit},
		{"256MiB", math.MaxInt64}, // left as the runtime set it (here: no limit)
	} {
		debug.SetMemoryLimit(math.MaxInt64)
		limitServeMemory(getenvFrom(map[string]string{"GOMEMLIMIT": tc.env}))
		if got := debug.SetMemoryLimit(-1); got != tc.want {
			t.Errorf("GOMEMLIMIT=%q: limit %d, want %d", tc.env, got, tc.want)
		}
	}
}
