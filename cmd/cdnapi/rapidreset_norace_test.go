//go:build !race

package main

import (
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestH2CRapidResetIsBounded counts the handlers a rapid-reset client gets
// run, which depends on how fast handlers finish against how fast the
// client's resets arrive: the race detector slows the one and not the
// other, so that the count means nothing under it. scripts/test runs this
// file's tests in a stage of their own, without -race.

// TestH2CRapidResetIsBounded checks that a client cancelling every
// request it sends over h2c has few handlers run for it: its connection is
// closed after at most resetsPerConn resets beyond its answers (plus the
// streams already running then), and once its address has used up its
// bucket, each new connection of it is closed at its first request
// (issue 36: before, every request of a client resetting no faster than
// the handlers finished was run).
func TestH2CRapidResetIsBounded(t *testing.T) {
	s := startServe(t, nil, "--db", "sqlite:"+filepath.Join(t.TempDir(), "reset.db"))
	api := strings.TrimPrefix(s.api, "http://")
	// Paced, so that net/http's own bound (a queue of handlers four times
	// MaxConcurrentStreams) does not end the connection first.
	const pairs, rate = 10_000, 2_000
	deadline := time.Now().Add(30 * time.Second)

	before := requestsCounted(t, s)
	r := rapidReset(api, "/api/v1/files?limit=5", "", pairs, rate, deadline)
	ran := requestsCounted(t, s) - before
	if !r.closed || r.sent >= pairs {
		t.Errorf("a connection sending %d HEADERS+RST_STREAM pairs: closed %v after %d pairs (%v); want closed before the end",
			pairs, r.closed, r.sent, r.readError)
	}
	if max := resetsPerConn + h2MaxConcurrentStreams; ran > max {
		t.Errorf("%d handlers ran for one connection's resets, want at most %d", ran, max)
	}

	// The same address again and again: its bucket runs dry, and then
	// no handler runs for it at all.
	before = requestsCounted(t, s)
	var last resetResult
	for range resetsPerAddr/resetsPerConn + 5 {
		last = rapidReset(api, "/api/v1/files?limit=5", "", 1_000, rate, deadline)
	}
	ran = requestsCounted(t, s) - before
	if max := resetsPerAddr + resetsPerConn + h2MaxConcurrentStreams; ran > max {
		t.Errorf("%d handlers ran for one address's resets over %d connections, want at most %d",
			ran, resetsPerAddr/resetsPerConn+5, max)
	}
	if !last.closed || last.sent >= 1_000 {
		t.Errorf("the address's last connection: closed %v after %d pairs", last.closed, last.sent)
	}
	if n := metricSum(t, s.admin, "cdnapi_http2_connections_closed_total", `reason="per_address"`); n < 1 {
		t.Errorf("no connection closed per address")
	}

	// A client of another address is served as ever.
	other := h2cClient(t)
	other.Transport.(*http.Transport).DialContext = (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}).DialContext
	closed := metricSum(t, s.admin, "cdnapi_http2_connections_closed_total")
	for range 3 * resetsPerConn {
		res, err := other.Get(s.api + "/api/v1/status")
		if err != nil {
			t.Fatalf("h2c GET after the attack: %v", err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
	if n := metricSum(t, s.admin, "cdnapi_http2_connections_closed_total"); n != closed {
		t.Errorf("%v connections closed for %d requests answered in full", n-closed, 3*resetsPerConn)
	}
}
