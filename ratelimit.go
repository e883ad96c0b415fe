package cdnapi

import (
	"context"
	"time"
)

// RateDecision is the outcome of counting one request against its client's
// token bucket. A bucket holds up to Burst tokens and refills at a steady
// rate; each request takes one.
type RateDecision struct {
	// Limited is false when no limit could be applied, such as while the
	// shared bucket store is unreachable: the request is served and its
	// answer carries no rate-limit headers.
	Limited bool
	// Allowed reports whether the request may be served.
	Allowed bool
	// Burst is the size of the bucket, and Window the time it takes to
	// refill from empty: the quota and window of RateLimit-Policy.
	Burst  int
	Window time.Duration
	// Remaining is how many more requests the bucket allows at once.
	Remaining int
	// Reset is the time until the bucket is full again.
	Reset time.Duration
	// RetryAfter is, for a refused request, the time until one is allowed.
	RetryAfter time.Duration
}

// RateLimiter counts requests against per-client token buckets.
// Implementations are internal/ratelimit's, in memory and in Redis.
type RateLimiter interface {
	// Take takes a token from client's bucket at now, the time of the
	// request, which its caller has read already: a clock read costs a
	// system call on some machines, and a request needs but one. A limiter
	// with a clock of its own (Redis's) ignores now for its buckets. Take
	// never fails: a limiter whose store is down lets the request through
	// (Limited false), and one that cannot decide in time refuses it.
	Take(ctx context.Context, client string, now time.Time) RateDecision
}
