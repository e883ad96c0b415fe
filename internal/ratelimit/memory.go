// Package ratelimit gives every client a token bucket: in the memory of one
// process (Memory), or in Redis, shared by every process of a fleet (Redis).
// Both implement cdnapi.RateLimiter with the same policy: Rate tokens a
// second, up to Burst.
package ratelimit

import (
	"context"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/cdnapi/cdnapi"
)

// Policy is the bucket every client gets: Rate requests a second on
// average, and bursts of up to Burst at once.
type Policy struct {
	Rate  int
	Burst int
}

// Window is the time an empty bucket takes to fill: the window of the
// RateLimit-Policy header.
func (p Policy) Window() time.Duration {
	return time.Duration(float64(p.Burst) / float64(p.Rate) * float64(time.Second))
}

// Memory keeps the buckets in this process. It bounds its memory: a bucket
// left idle for a Window is full, exactly as a new one, so buckets idle that
// long are dropped, which forgets nothing.
type Memory struct {
	policy Policy

	mu        sync.Mutex
	buckets   map[string]*bucket
	lastSweep time.Time
}

type bucket struct {
	lim      *rate.Limiter
	lastSeen time.Time
}

// NewMemory returns a limiter that applies p to every client in memory.
func NewMemory(p Policy) *Memory {
	return &Memory{policy: p, buckets: map[string]*bucket{}}
}

// Take takes a token from client's bucket at now.
func (m *Memory) Take(_ context.Context, client string, now time.Time) cdnapi.RateDecision {
	m.mu.Lock()
	m.sweepLocked(now)
	b, ok := m.buckets[client]
	if !ok {
		b = &bucket{lim: rate.NewLimiter(rate.Limit(m.policy.Rate), m.policy.Burst)}
		m.buckets[client] = b
	}
	b.lastSeen = now
	allowed := b.lim.AllowN(now, 1)
	tokens := b.lim.TokensAt(now)
	m.mu.Unlock()

	d := cdnapi.RateDecision{
		Limited: true,
		Allowed: allowed,
		Burst:   m.policy.Burst,
		Window:  m.policy.Window(),
	}
	d.Remaining = max(0, int(math.Floor(tokens)))
	d.Reset = m.secondsFor(float64(m.policy.Burst) - tokens)
	if !allowed {
		d.RetryAfter = m.secondsFor(1 - tokens)
	}
	return d
}

// secondsFor is the time the bucket takes to gain n tokens.
func (m *Memory) secondsFor(n float64) time.Duration {
	if n <= 0 {
		return 0
	}
	return time.Duration(n / float64(m.policy.Rate) * float64(time.Second))
}

// sweepLocked drops the buckets idle for a window, at most once a window,
// so the work is spread thin: memory stays proportional to the clients of
// the last two windows. m.mu must be held.
func (m *Memory) sweepLocked(now time.Time) {
	window := max(m.policy.Window(), time.Second)
	if now.Sub(m.lastSweep) < window {
		return
	}
	m.lastSweep = now
	for k, b := range m.buckets {
		if now.Sub(b.lastSeen) >= window {
			delete(m.buckets, k)
		}
	}
}

// Len returns the number of buckets held.
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.buckets)
}
