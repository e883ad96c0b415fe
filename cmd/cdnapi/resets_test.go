package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkResetGuard is the cost of the rapid-reset guard (resets.go) on
// an HTTP/2 request that is answered, not reset: the wrapper around a
// handler that does nothing, against the handler alone, with as many
// goroutines as GOMAXPROCS (the guard has a lock, which answered streams
// need not take). Each goroutine is a connection of the same address, which
// has reset streams before. "guarded" includes growStack
// (h2stack.go), whose own cost, on a stack already grown, is "growStack".
// The h2c hot page costs about 70 µs of CPU an answer (scripts/bench-h2c):
// the guard's part of it is "guarded" less "bare".
//
//	go test ./cmd/cdnapi -run '^$' -bench BenchmarkResetGuard
func BenchmarkResetGuard(b *testing.B) {
	g := newResetGuard(nil, slog.New(slog.NewTextHandler(io.Discard, nil)), prometheus.NewRegistry())
	g.takeReset(netip.MustParseAddr("192.0.2.1")) // an address with a bucket
	nothing := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	for _, bc := range []struct {
		name string
		h    http.Handler
	}{
		{"bare", nothing},
		{"growStack", http.HandlerFunc(func(http.ResponseWriter, *http.Request) { growStack(0) })},
		{"guarded", g.wrap(nothing)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				c := &h2Conn{addr: netip.MustParseAddr("192.0.2.1")}
				r := httptest.NewRequest("GET", "/api/v1/files?limit=20", nil)
				r.ProtoMajor, r.ProtoMinor = 2, 0
				r = r.WithContext(context.WithValue(context.Background(), h2ConnKey{}, c))
				var w http.ResponseWriter = httptest.NewRecorder()
				for pb.Next() {
					bc.h.ServeHTTP(w, r)
				}
			})
		})
	}
}

// TestResetGuardAddrExhausted checks the bucket of an address across its
// refill, and that addrExhausted's path without the lock (no address out
// of resets) agrees with the bucket.
func TestResetGuardAddrExhausted(t *testing.T) {
	g := newResetGuard(nil, slog.New(slog.NewTextHandler(io.Discard, nil)), prometheus.NewRegistry())
	last := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC) // of the resets below
	now := last
	g.now = func() time.Time { return now }
	bad, good := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	g.takeReset(good)
	for i := range resetsPerAddr {
		if !g.takeReset(bad) {
			t.Fatalf("reset %d of %d refused", i+1, resetsPerAddr)
		}
		if i < resetsPerAddr-1 && g.addrExhausted(bad) {
			t.Fatalf("exhausted after %d resets of %d", i+1, resetsPerAddr)
		}
	}
	step := time.Second / resetsPerAddrRate // one reset's refill
	for _, c := range []struct {
		after     time.Duration
		exhausted bool
	}{{0, true}, {step / 2, true}, {step + 2*time.Millisecond, false}} {
		now = last.Add(c.after)
		if got := g.addrExhausted(bad); got != c.exhausted {
			t.Errorf("%v after the last reset: exhausted %v, want %v", c.after, got, c.exhausted)
		}
		if g.addrExhausted(good) {
			t.Errorf("%v after: an address with resets left is exhausted", c.after)
		}
	}
	if !g.takeReset(bad) || g.takeReset(bad) {
		t.Errorf("after one reset's refill, want one reset taken and the next refused")
	}
	if !g.addrExhausted(bad) {
		t.Errorf("exhausted again: addrExhausted says no")
	}
}
