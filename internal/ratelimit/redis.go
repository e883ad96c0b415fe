package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	neturl "net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/cdnapi/cdnapi"
)

// DefaultRedisTimeout bounds one Redis call. A healthy Redis on the same
// network answers in well under a millisecond; past this, the request is
// refused (429 with Retry-After) rather than made to wait, or let through
// unchecked.
const DefaultRedisTimeout = 50 * time.Millisecond

// DefaultRedisCheckInterval is how often Run pings Redis: it notices an
// outage without traffic, and the end of one, after which requests use Redis
// again.
const DefaultRedisCheckInterval = time.Second

// DefaultRedisCheckTimeout bounds Run's ping, the only judge of an outage.
// It is longer than a request's timeout: a request may not wait, but a
// background check can, so that a moment of load (a stalled process, a busy
// machine) is not mistaken for an outage.
const DefaultRedisCheckTimeout = 500 * time.Millisecond

// DefaultRedisDownAfter is how many pings in a row must fail before Redis
// is taken to be down: one slow ping on a busy machine is no outage, and
// switching limits off for it opens them to whoever caused the load.
const DefaultRedisDownAfter = 3

// recheckAfter is the pause before the next ping after a failed one, while
// the outage is not yet declared: a Redis that refuses connections is down
// within DownAfter of them, about a tenth of a second.
const recheckAfter = 50 * time.Millisecond

// undecidedRetry is the Retry-After of a request refused because Redis did
// not answer in time: long enough for a moment of load to pass.
const undecidedRetry = time.Second

// RedisOptions tunes a Redis limiter. Zero fields take their defaults.
type RedisOptions struct {
	Timeout       time.Duration // DefaultRedisTimeout
	CheckInterval time.Duration // DefaultRedisCheckInterval
	CheckTimeout  time.Duration // DefaultRedisCheckTimeout, at least Timeout
	DownAfter     int           // failed pings in a row that make an outage; DefaultRedisDownAfter
	Logger        *slog.Logger  // outages, once each; discarded if nil
}

// Redis keeps the buckets in Redis, so every process that shares it
// enforces one limit together. Each Take is at most one round trip: an
// EVALSHA of redis_rate's GCRA script, which reads Redis's own clock, so the
// processes' clocks need not agree.
//
// A client that Redis refused is refused here, without asking Redis again,
// until the time Redis said it may retry: other processes can only take
// from its bucket meanwhile, never fill it, so Redis would say no too. A
// client flooding one process thus costs Redis one call per refill, not
// one per request, and cannot crowd out the others' calls.
//
// It fails open only while Redis is down. A call that fails at once (the
// connection refused or reset) lets the request through unchecked, and
// counted, and asks Run to ping Redis with the longer CheckTimeout; when
// DownAfter pings in a row fail (the ones after the first come at once),
// the outage is logged once and reported by Status, and
// while it lasts requests skip Redis, at no cost, until a ping finds it
// answering again. A call that does not finish within the timeout (Redis
// or this process too busy, every connection taken) decides nothing: that
// request is refused with a Retry-After of a second, and counted, rather
// than let through, which under a flood would open the limit to the very
// client causing it. Status reports degraded_performance while Redis is
// down, and whenever requests went through unchecked since it was last
// asked, so that an unchecked pass shows within one probe interval.
type Redis struct {
	policy Policy
	limit  redis_rate.Limit
	// The requests' pool and Run's own connection, which a busy pool
	// cannot hold up; each is replaced by a new one around an outage (see
	// renewPinger).
	pool     atomic.Pointer[redisPool]
	pinger   atomic.Pointer[redis.Client]
	opts     *redis.Options // the requests' pool's
	pingOpts *redis.Options // the pinger's: one connection
	timeout  time.Duration
	every    time.Duration
	checkTO  time.Duration
	downAt   int // DownAfter
	log      *slog.Logger

	down  atomic.Bool
	check chan struct{} // a request failed: Run pings now
	logMu sync.Mutex    // orders the outage and recovery log lines

	renewMu sync.Mutex // orders renewing the pools and Close
	closed  bool

	refused refusals
	// uncheckedSeen is the count of unchecked requests when Status last
	// looked.
	uncheckedSeen atomic.Uint64
	unchecked     atomic.Uint64

	unlimited prometheus.Counter
	undecided prometheus.Counter
	local     prometheus.Counter
	up        prometheus.Gauge
	// pingFails counts every ping that failed, an outage or not: a
	// Redis that flaps under DownAfter shows there before it shows as
	// down.
	pingFails prometheus.Counter
}

// NewRedis returns a limiter applying p with the buckets in the Redis at
// url (redis://[user:password@]host:port[/db]). It does not connect: Redis
// may come up after the process, which serves without limits meanwhile.
func NewRedis(url string, p Policy, opts RedisOptions) (*Redis, error) {
	o, err := redis.ParseURL(url)
	if err != nil {
		// The parser's message may quote the URL, password and all.
		return nil, fmt.Errorf("ratelimit: %s: %s", RedactURL(url), redactIn(err.Error(), url))
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultRedisTimeout
	}
	if opts.CheckInterval <= 0 {
		opts.CheckInterval = DefaultRedisCheckInterval
	}
	if opts.CheckTimeout <= 0 {
		opts.CheckTimeout = DefaultRedisCheckTimeout
	}
	opts.CheckTimeout = max(opts.CheckTimeout, opts.Timeout)
	if opts.DownAfter <= 0 {
		opts.DownAfter = DefaultRedisDownAfter
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	// The client's own timeouts are the check's; each request's context
	// carries the shorter Timeout, which go-redis then applies to the dial,
	// the wait for a connection, the write and the read.
	t := opts.CheckTimeout
	o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.PoolTimeout = t, t, t, t
	o.ContextTimeoutEnabled = true
	o.MaxRetries = -1 // a retry would double the time an outage costs
	// One dial, not go-redis's five spaced 100ms apart: a refused
	// connection is an outage, and must say so at once rather than run
	// out of the request's time, which would read as a busy Redis.
	o.DialerRetries = 1
	o.DialerRetryTimeout = time.Microsecond // it waits this even after the last try
	po := *o
	po.PoolSize, po.MinIdleConns, po.MaxIdleConns = 1, 0, 1
	r := &Redis{
		policy:   p,
		limit:    redis_rate.Limit{Rate: p.Rate, Burst: p.Burst, Period: time.Second},
		opts:     o,
		pingOpts: &po,
		timeout:  opts.Timeout,
		every:    opts.CheckInterval,
		checkTO:  opts.CheckTimeout,
		downAt:   opts.DownAfter,
		log:      opts.Logger,
		check:    make(chan struct{}, 1),
		refused:  refusals{until: map[string]refusal{}},
		unlimited: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cdnapi_rate_limit_unlimited_total",
			Help: "Requests served without a rate limit because Redis was down (its connection failed).",
		}),
		undecided: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cdnapi_rate_limit_undecided_total",
			Help: "Requests refused (429) because Redis did not answer within the timeout.",
		}),
		local: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cdnapi_rate_limit_refused_locally_total",
			Help: "Requests refused without asking Redis, whose last answer for the client said to wait.",
		}),
		up: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "cdnapi_rate_limit_redis_up",
			Help: "1 while the rate-limit Redis answers, 0 during an outage.",
		}),
		pingFails: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cdnapi_rate_limit_redis_ping_failures_total",
			Help: "Pings of the rate-limit Redis that failed or missed their timeout, whether or not they made an outage.",
		}),
	}
	r.up.Set(1)
	r.pool.Store(newRedisPool(o))
	r.pinger.Store(redis.NewClient(&po))
	return r, nil
}

// redisPool is the requests' connection pool and the limiter on it.
type redisPool struct {
	client  *redis.Client
	limiter *redis_rate.Limiter
}

func newRedisPool(o *redis.Options) *redisPool {
	c := redis.NewClient(o)
	return &redisPool{client: c, limiter: redis_rate.NewLimiter(c)}
}

// RedactURL returns a Redis URL without its password, for messages and
// logs: the password of its user part and a password parameter become
// "xxxxx". A URL that does not parse is shown as its scheme only, since
// where its password is cannot be told.
func RedactURL(raw string) string {
	scheme, _, found := strings.Cut(raw, "://")
	u, err := neturl.Parse(raw)
	if err != nil || !found {
		if !found {
			return "…"
		}
		return scheme + "://…"
	}
	if _, has := u.User.Password(); has {
		u.User = neturl.UserPassword(u.User.Username(), "xxxxx")
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// redactIn returns msg with every part of raw that could be its password
// replaced: the text between "//user:" and the last "@" of the authority,
// and a password parameter's value, found without parsing raw, which may
// not parse.
func redactIn(msg, raw string) string {
	msg = strings.ReplaceAll(msg, raw, RedactURL(raw))
	_, rest, found := strings.Cut(raw, "://")
	if !found {
		return msg
	}
	authority, _, _ := strings.Cut(rest, "/")
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		if _, pw, ok := strings.Cut(authority[:at], ":"); ok && pw != "" {
			msg = strings.ReplaceAll(msg, pw, "xxxxx")
		}
	}
	if _, q, ok := strings.Cut(raw, "?"); ok {
		for pair := range strings.SplitSeq(q, "&") {
			if v, ok := strings.CutPrefix(pair, "password="); ok && v != "" {
				msg = strings.ReplaceAll(msg, v, "xxxxx")
			}
		}
	}
	return msg
}

// Take takes a token from client's bucket in Redis. It ignores now for
// the bucket, which runs on Redis's clock, which every process shares, and
// uses it to remember refusals.
func (r *Redis) Take(ctx context.Context, client string, now time.Time) cdnapi.RateDecision {
	if r.down.Load() {
		r.passUnchecked()
		return cdnapi.RateDecision{Allowed: true}
	}
	if d, ok := r.refused.check(client, now); ok {
		r.local.Inc()
		return r.refusal(d.RetryAfter, d.Reset)
	}
	callCtx, cancel := context.WithTimeout(ctx, r.timeout)
	res, err := r.pool.Load().limiter.Allow(callCtx, client, r.limit)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			// The client hung up: nothing to decide, no one to answer.
			return r.refusal(undecidedRetry, undecidedRetry)
		}
		select {
		case r.check <- struct{}{}:
		default: // a check is already due
		}
		if timedOut(err) {
			r.undecided.Inc()
			return r.refusal(undecidedRetry, undecidedRetry)
		}
		r.passUnchecked()
		return cdnapi.RateDecision{Allowed: true}
	}
	d := cdnapi.RateDecision{
		Limited:   true,
		Allowed:   res.Allowed > 0,
		Burst:     r.policy.Burst,
		Window:    r.policy.Window(),
		Remaining: res.Remaining,
		Reset:     res.ResetAfter,
	}
	if !d.Allowed {
		d.RetryAfter = res.RetryAfter
		r.refused.add(client, now, res.RetryAfter, res.ResetAfter)
	}
	return d
}

// refusal is the decision that refuses a request for retryAfter.
func (r *Redis) refusal(retryAfter, reset time.Duration) cdnapi.RateDecision {
	return cdnapi.RateDecision{Limited: true, Burst: r.policy.Burst, Window: r.policy.Window(),
		RetryAfter: retryAfter, Reset: reset}
}

// passUnchecked counts a request let through without a check.
func (r *Redis) passUnchecked() {
	r.unlimited.Inc()
	r.unchecked.Add(1)
}

// timedOut reports whether err is a call that ran out of time, waiting
// for a connection or for the answer, rather than one that failed.
func timedOut(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, redis.ErrPoolTimeout) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// refusals remembers, per client, until when Redis refuses it.
type refusals struct {
	mu        sync.Mutex
	until     map[string]refusal
	lastSweep time.Time
}

type refusal struct{ retry, full time.Time }

// check returns the refusal of client at now, if Redis's last answer
// still stands.
func (f *refusals) check(client string, now time.Time) (cdnapi.RateDecision, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.until) == 0 {
		return cdnapi.RateDecision{}, false
	}
	x, ok := f.until[client]
	if !ok || !now.Before(x.retry) {
		return cdnapi.RateDecision{}, false
	}
	return cdnapi.RateDecision{RetryAfter: x.retry.Sub(now), Reset: x.full.Sub(now)}, true
}

// add remembers that client may retry after retryAfter from now, and that
// its bucket is full after reset. Refusals past their time are dropped at
// most once a second, so the map holds the clients refused in the last
// second or so.
func (f *refusals) add(client string, now time.Time, retryAfter, reset time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if now.Sub(f.lastSweep) >= time.Second {
		f.lastSweep = now
		for k, x := range f.until {
			if !now.Before(x.retry) {
				delete(f.until, k)
			}
		}
	}
	f.until[client] = refusal{retry: now.Add(retryAfter), full: now.Add(reset)}
}

// Run pings Redis every CheckInterval, and at once when a request failed,
// until ctx ends, marking it down when DownAfter pings in a row do not
// answer within CheckTimeout, and up when one does again. After a failed
// ping, while the outage is not declared, the next one follows within
// recheckAfter.
func (r *Redis) Run(ctx context.Context) {
	t := time.NewTicker(r.every)
	defer t.Stop()
	failures := 0 // pings failed in a row
	for first := true; ; first = false {
		if !first {
			var recheck <-chan time.Time
			if failures > 0 && failures < r.downAt {
				recheck = time.After(min(recheckAfter, r.every))
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			case <-r.check:
			case <-recheck:
			}
		}
		pingCtx, cancel := context.WithTimeout(ctx, r.checkTO)
		err := r.pinger.Load().Ping(pingCtx).Err()
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			r.pingFails.Inc()
			r.renewPinger()
			if failures++; failures >= r.downAt {
				r.failed(err)
			}
		default:
			failures = 0
			if r.down.Load() {
				r.renewPool()
				r.recovered()
			}
		}
	}
}

// A go-redis pool that failed to dial as many times as it has
// connections stops dialing: each Get returns the last dial error at once,
// until a redial it retries every second succeeds. That would delay the
// end of an outage by up to a second for the pinger (one connection: one
// failed ping), and let requests through unchecked meanwhile on the
// requests' pool, whose calls fail at once with that error while Redis
// answers (the requests that find Redis gone before a ping declares the
// outage each fail a dial: a busy process's pool of 10 per CPU fails them
// all). So the pinger gets a new pool after each failed ping, and the
// requests a new one when Redis answers again: a new pool dials at once.

// renewPinger replaces the pinger by a new client, after a failed ping.
func (r *Redis) renewPinger() {
	r.renewMu.Lock()
	defer r.renewMu.Unlock()
	if r.closed {
		return
	}
	r.pinger.Swap(redis.NewClient(r.pingOpts)).Close()
}

// renewPool replaces the requests' pool by a new one, when Redis answers
// again after an outage. The old one is closed once the calls still on
// it (made before the outage was declared) have run out of time.
func (r *Redis) renewPool() {
	r.renewMu.Lock()
	defer r.renewMu.Unlock()
	if r.closed {
		return
	}
	old := r.pool.Swap(newRedisPool(r.opts))
	time.AfterFunc(r.checkTO, func() { old.client.Close() })
}

// failed marks Redis down, logging the first failure of an outage only.
func (r *Redis) failed(err error) {
	r.logMu.Lock()
	defer r.logMu.Unlock()
	if r.down.Swap(true) {
		return
	}
	r.up.Set(0)
	if errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("no answer within %v", r.checkTO)
	}
	r.log.Warn("rate limit: Redis is unreachable; serving without rate limits until it answers", "err", err)
}

// recovered marks Redis up again, logging it once.
func (r *Redis) recovered() {
	r.logMu.Lock()
	defer r.logMu.Unlock()
	if r.down.Swap(false) {
		r.up.Set(1)
		r.log.Info("rate limit: Redis answers again; rate limits are back")
	}
}

// Status is the API component's status as far as rate limiting goes:
// degraded_performance while Redis is unreachable, or when requests went
// through unchecked since Status was last asked (the status evaluator asks
// once per probe), else operational.
func (r *Redis) Status() cdnapi.Status {
	n := r.unchecked.Load()
	moved := r.uncheckedSeen.Swap(n) != n
	if r.down.Load() || moved {
		return cdnapi.StatusDegradedPerformance
	}
	return cdnapi.StatusOperational
}

// Collectors returns the limiter's metrics, for a registry.
func (r *Redis) Collectors() []prometheus.Collector {
	return []prometheus.Collector{r.unlimited, r.undecided, r.local, r.up, r.pingFails}
}

// Close closes the connections to Redis.
func (r *Redis) Close() error {
	r.renewMu.Lock()
	defer r.renewMu.Unlock()
	r.closed = true
	return errors.Join(r.pool.Load().client.Close(), r.pinger.Load().Close())
}
