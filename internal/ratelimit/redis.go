package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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
// served without a limit rather than made to wait.
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

// RedisOptions tunes a Redis limiter. Zero fields take their defaults.
type RedisOptions struct {
	Timeout       time.Duration // DefaultRedisTimeout
	CheckInterval time.Duration // DefaultRedisCheckInterval
	CheckTimeout  time.Duration // DefaultRedisCheckTimeout, at least Timeout
	Logger        *slog.Logger  // outages, once each; discarded if nil
}

// Redis keeps the buckets in Redis, so every process that shares it
// enforces one limit together. Each Take is one round trip: an EVALSHA of
// redis_rate's GCRA script, which reads Redis's own clock, so the processes'
// clocks need not agree.
//
// It fails open. When Redis does not answer within the timeout, the request
// is served without a limit, and counted. A failed request does not by
// itself declare an outage: one slow answer on a loaded machine would
// otherwise turn the limits off for every client for a whole check
// interval. It asks Run to ping Redis at once, with the longer
// CheckTimeout; when that ping fails, the outage is logged once and reported
// by Status, and while it lasts requests skip Redis, at no cost, until a
// ping finds it answering again.
type Redis struct {
	policy  Policy
	limit   redis_rate.Limit
	client  *redis.Client
	limiter *redis_rate.Limiter
	timeout time.Duration
	every   time.Duration
	checkTO time.Duration
	log     *slog.Logger

	down  atomic.Bool
	check chan struct{} // a request failed: Run pings now
	logMu sync.Mutex    // orders the outage and recovery log lines

	unlimited prometheus.Counter
	up        prometheus.Gauge
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
	client := redis.NewClient(o)
	r := &Redis{
		policy:  p,
		limit:   redis_rate.Limit{Rate: p.Rate, Burst: p.Burst, Period: time.Second},
		client:  client,
		limiter: redis_rate.NewLimiter(client),
		timeout: opts.Timeout,
		every:   opts.CheckInterval,
		checkTO: opts.CheckTimeout,
		log:     opts.Logger,
		check:   make(chan struct{}, 1),
		unlimited: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cdnapi_rate_limit_unlimited_total",
			Help: "Requests served without a rate limit because Redis did not answer in time.",
		}),
		up: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "cdnapi_rate_limit_redis_up",
			Help: "1 while the rate-limit Redis answers, 0 during an outage.",
		}),
	}
	r.up.Set(1)
	return r, nil
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

// Take takes a token from client's bucket in Redis, or lets the request
// through unlimited when Redis does not answer. It ignores now: the buckets
// run on Redis's clock, which every process shares.
func (r *Redis) Take(ctx context.Context, client string, _ time.Time) cdnapi.RateDecision {
	if r.down.Load() {
		r.unlimited.Inc()
		return cdnapi.RateDecision{Allowed: true}
	}
	callCtx, cancel := context.WithTimeout(ctx, r.timeout)
	res, err := r.limiter.Allow(callCtx, client, r.limit)
	cancel()
	if err != nil {
		if ctx.Err() == nil { // not the client hanging up
			select {
			case r.check <- struct{}{}:
			default: // a check is already due
			}
		}
		r.unlimited.Inc()
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
	}
	return d
}

// Run pings Redis every CheckInterval, and at once when a request failed,
// until ctx ends, marking it down when it does not answer within
// CheckTimeout and up when it does again.
func (r *Redis) Run(ctx context.Context) {
	t := time.NewTicker(r.every)
	defer t.Stop()
	for first := true; ; first = false {
		if !first {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			case <-r.check:
			}
		}
		pingCtx, cancel := context.WithTimeout(ctx, r.checkTO)
		err := r.client.Ping(pingCtx).Err()
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			r.failed(err)
		case r.down.Load():
			r.recovered()
		}
	}
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
// degraded_performance while Redis is unreachable, else operational.
func (r *Redis) Status() cdnapi.Status {
	if r.down.Load() {
		return cdnapi.StatusDegradedPerformance
	}
	return cdnapi.StatusOperational
}

// Collectors returns the limiter's metrics, for a registry.
func (r *Redis) Collectors() []prometheus.Collector {
	return []prometheus.Collector{r.unlimited, r.up}
}

// Close closes the connections to Redis.
func (r *Redis) Close() error { return r.client.Close() }
