// Package ratelimit gives every client a token bucket: in the memory of one
// process (Memory), or in Redis, shared by every process of a fleet (Redis).
// Both implement cdnapi.RateLimiter with the same policy: Rate tokens a
// second, up to Burst.
package ratelimit

import (
	"context"
	"sync"
	"time"

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

// Memory keeps the buckets in this process. A bucket is GCRA's one time,
// the theoretical arrival time of the next request, the algorithm that
// redis_rate runs in Redis: a process answers alike with and without Redis,
// and a request costs one lock, one map lookup and integer arithmetic.
// Memory is bounded: a bucket whose time has passed is full, exactly as a
// new one, so such buckets are dropped, which forgets nothing.
type Memory struct {
	policy   Policy
	window   time.Duration // p.Window()
	interval time.Duration // between two tokens
	offset   time.Duration // the burst's worth of intervals
	mu       sync.Mutex
	// epoch is the origin of the buckets' times, which are durations since
	// it: one subtraction per request, on the monotonic clock. It is the
	// time of the first request.
	epoch     time.Time
	buckets   map[string]*bucket
	lastSweep time.Duration
}

// bucket is a client's theoretical arrival time, since the epoch.
type bucket struct{ tat time.Duration }

// NewMemory returns a limiter that applies p to every client in memory.
func NewMemory(p Policy) *Memory {
	interval := max(time.Second/time.Duration(p.Rate), 1)
	return &Memory{policy: p, window: p.Window(), interval: interval,
		offset: interval * time.Duration(p.Burst), buckets: map[string]*bucket{}}
}

// Take takes a token from client's bucket at now.
func (m *Memory) Take(_ context.Context, client string, now time.Time) cdnapi.RateDecision {
	d := cdnapi.RateDecision{Limited: true, Burst: m.policy.Burst, Window: m.window}
	m.mu.Lock()
	if m.epoch.IsZero() {
		m.epoch = now
	}
	t := now.Sub(m.epoch)
	m.sweepLocked(t)
	b := m.buckets[client]
	if b == nil {
		b = &bucket{tat: t}
		m.buckets[client] = b
	}
	tat := max(b.tat, t)
	next := tat + m.interval
	// diff is how far the request is within the burst: negative, it is
	// early by that much.
	diff := t - (next - m.offset)
	if diff < 0 {
		m.mu.Unlock()
		d.RetryAfter, d.Reset = -diff, tat-t
		return d
	}
	b.tat = next
	m.mu.Unlock()
	d.Allowed = true
	d.Remaining = int(diff / m.interval)
	d.Reset = next - t
	return d
}

// sweepLocked drops the full buckets, at most once a window, so the work is
// spread thin: memory stays proportional to the clients of the last two
// windows. m.mu must be held.
func (m *Memory) sweepLocked(t time.Duration) {
	if t-m.lastSweep < max(m.window, time.Second) {
		return
	}
	m.lastSweep = t
	for k, b := range m.buckets {
		if b.tat <= t {
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
