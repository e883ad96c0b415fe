package main

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The bounds of HTTP/2 rapid reset (CVE-2023-44487): a client that sends a
// request and cancels it at once (HEADERS, then RST_STREAM) costs itself a
// few bytes, while the server runs the whole handler. net/http's own
// mitigation only queues handlers past MaxConcurrentStreams and ends the
// connection (ENHANCE_YOUR_CALM) when that queue overflows: a client that
// resets no faster than the handlers finish has every one of them run, on
// one connection, forever (issue 36). These bound it.
const (
	// h2MaxConcurrentStreams is the streams a connection may have open at
	// once (net/http's default is 250): its handlers run at once, and
	// net/http queues four times as many before it calls for calm.
	h2MaxConcurrentStreams = 100
	// resetsPerConn is how many streams a connection may reset before
	// their handler finished beyond those it had answered: a client that
	// cancels more than it reads, past this, is closed.
	resetsPerConn = 100
	// resetsPerAddr and resetsPerAddrRate are the bucket of resets of one
	// client address over all its connections: its size, and its refill a
	// second. While it is empty, the address's HTTP/2 connections are
	// closed at their next request, before its handler runs.
	resetsPerAddr     = 500
	resetsPerAddrRate = 50
	// resetAddrs bounds the addresses remembered: past it, addresses whose
	// bucket is full again are forgotten, and new ones go untracked.
	resetAddrs = 10_000
)

// resetGuard counts, on each HTTP/2 connection and each client address,
// the streams reset before their handler finished, and closes the
// connections past the bounds. Load balancers in --trusted-proxies carry
// many clients' streams on their connections, and are bound only per
// connection.
type resetGuard struct {
	trusted func(netip.Addr) bool
	logger  *slog.Logger
	now     func() time.Time
	closed  *prometheus.CounterVec // by reason

	mu    sync.Mutex
	addrs map[netip.Addr]*resetBucket
	// calmUntil is the time, in Unix nanoseconds, until which some address
	// may have no reset left: past it, every bucket holds one at least, and
	// addrExhausted answers without taking mu, which every HTTP/2 request
	// of every client would otherwise take. It is written with mu held.
	calmUntil atomic.Int64
}

// resetBucket is the resets an address may still make: tokens at time at.
type resetBucket struct {
	tokens float64
	at     time.Time
}

// h2Conn is one connection as the guard sees it, in its requests' context.
type h2Conn struct {
	conn              net.Conn
	addr              netip.Addr
	resets, completed atomic.Int64
	closed            atomic.Bool
}

type h2ConnKey struct{}

func newResetGuard(trusted func(netip.Addr) bool, logger *slog.Logger, reg prometheus.Registerer) *resetGuard {
	g := &resetGuard{
		trusted: trusted,
		logger:  logger,
		now:     time.Now,
		addrs:   map[netip.Addr]*resetBucket{},
		closed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cdnapi_http2_connections_closed_total",
			Help: "HTTP/2 connections closed for resetting streams before their answer (rapid reset), by reason: per_connection or per_address.",
		}, []string{"reason"}),
	}
	for _, reason := range []string{"per_connection", "per_address"} {
		g.closed.WithLabelValues(reason)
	}
	reg.MustRegister(g.closed)
	return g
}

// serveUnencryptedHTTP2 has srv speak HTTP/2 without TLS to clients that
// start with its preface (h2c with prior knowledge, as load balancers and
// gRPC-style clients do), beside HTTP/1.1 on the same port, with the
// guard's bounds on resets. net/http checks for the preface once per
// connection, before its first request, so HTTP/1.1 clients pay nothing
// measurable (docs/performance.md: HTTP/2).
func (g *resetGuard) serveUnencryptedHTTP2(srv *http.Server) {
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	srv.Protocols = &p
	srv.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: h2MaxConcurrentStreams}
	srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		var addr netip.Addr
		if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
			addr = a.AddrPort().Addr().Unmap()
		}
		return context.WithValue(ctx, h2ConnKey{}, &h2Conn{conn: c, addr: addr})
	}
	srv.Handler = g.wrap(srv.Handler)
}

// wrap runs next for HTTP/2 requests only when their connection is within
// the bounds and the stream is not reset already, and counts the streams
// reset before next finished.
func (g *resetGuard) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := r.Context().Value(h2ConnKey{}).(*h2Conn)
		if r.ProtoMajor != 2 || c == nil {
			next.ServeHTTP(w, r)
			return
		}
		growStack(0) // a new goroutine per stream: see h2stack.go
		if c.closed.Load() {
			return
		}
		if g.addrExhausted(c.addr) {
			g.close(c, "per_address")
			return
		}
		// net/http starts the handler as soon as HEADERS arrive; the
		// RST_STREAM right behind them has often been read by now.
		if r.Context().Err() == nil {
			next.ServeHTTP(w, r)
		}
		// Before the handler returns, the stream's context ends only by
		// the client's reset or the connection's end.
		if r.Context().Err() == nil {
			c.completed.Add(1)
			return
		}
		if c.closed.Load() {
			return
		}
		resets := c.resets.Add(1)
		if resets > resetsPerConn && resets > c.completed.Load() {
			g.close(c, "per_connection")
			return
		}
		if !g.takeReset(c.addr) {
			g.close(c, "per_address")
		}
	})
}

// close closes c's connection, once: every stream on it ends.
func (g *resetGuard) close(c *h2Conn, reason string) {
	if !c.closed.CompareAndSwap(false, true) {
		return
	}
	c.conn.Close()
	g.closed.WithLabelValues(reason).Inc()
	g.logger.Warn("closed an HTTP/2 connection that resets streams before their answer (rapid reset)",
		"client", c.addr.String(), "resets", c.resets.Load(), "completed", c.completed.Load(), "bound", reason)
}

// bucket returns addr's bucket refilled to now, creating it full; nil when
// addr is not bound per address. g.mu is held.
func (g *resetGuard) bucket(addr netip.Addr, now time.Time) *resetBucket {
	if !addr.IsValid() || (g.trusted != nil && g.trusted(addr)) {
		return nil
	}
	b := g.addrs[addr]
	if b == nil {
		if len(g.addrs) >= resetAddrs {
			for a, old := range g.addrs {
				if old.refill(now) >= resetsPerAddr {
					delete(g.addrs, a)
				}
			}
			if len(g.addrs) >= resetAddrs {
				return nil
			}
		}
		b = &resetBucket{tokens: resetsPerAddr, at: now}
		g.addrs[addr] = b
	}
	b.refill(now)
	return b
}

func (b *resetBucket) refill(now time.Time) float64 {
	b.tokens = min(resetsPerAddr, b.tokens+now.Sub(b.at).Seconds()*resetsPerAddrRate)
	b.at = now
	return b.tokens
}

// takeReset takes one reset from addr's bucket, and reports whether there
// was one.
func (g *resetGuard) takeReset(addr netip.Addr) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	b := g.bucket(addr, g.now())
	if b == nil {
		return true
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	if b.tokens < 1 {
		// The bucket holds one again after (1-tokens)/rate seconds; a
		// millisecond more covers the rounding of the refill.
		refilled := b.at.Add(time.Duration((1-b.tokens)/resetsPerAddrRate*float64(time.Second)) + time.Millisecond)
		if u := refilled.UnixNano(); u > g.calmUntil.Load() {
			g.calmUntil.Store(u)
		}
	}
	return true
}

// addrExhausted reports whether addr has no reset left.
func (g *resetGuard) addrExhausted(addr netip.Addr) bool {
	if !addr.IsValid() || g.now().UnixNano() >= g.calmUntil.Load() {
		return false // no address is out of resets: the common case
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.addrs[addr]; !ok {
		return false // cheap for the addresses that never reset
	}
	b := g.bucket(addr, g.now())
	return b != nil && b.tokens < 1
}
