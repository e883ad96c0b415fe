package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/auth"
	"github.com/cdnapi/cdnapi/internal/httpapi"
	"github.com/cdnapi/cdnapi/internal/ratelimit"
)

// guardFlags are serve's flags of access control and fair use.
type guardFlags struct {
	auth           *string
	rateLimit      *int
	rateBurst      *int
	rateRedis      *string
	redisTimeout   *time.Duration
	trustedProxies *string
}

func addGuardFlags(fs *flag.FlagSet) guardFlags {
	return guardFlags{
		auth:           fs.String("auth", "off", "off, or required: files, regions and assets need Authorization: Bearer <key> (see cdnapi keys)"),
		rateLimit:      fs.Int("rate-limit", 0, "requests per second allowed to each client (API key, else client IP) on average; 0 turns limits off"),
		rateBurst:      fs.Int("rate-burst", 0, "requests a client may make at once, the size of its bucket (default: twice --rate-limit)"),
		rateRedis:      fs.String("rate-limit-redis", "", "redis://host:port of a Redis that keeps the buckets, so every process sharing it enforces one limit (default: in this process's memory)"),
		redisTimeout:   fs.Duration("rate-limit-redis-timeout", ratelimit.DefaultRedisTimeout, "how long a request waits for Redis before it is refused (429, Retry-After: 1); only a Redis that refuses connections lets requests through unchecked"),
		trustedProxies: fs.String("trusted-proxies", "", "comma-separated CIDRs of proxies whose X-Forwarded-For is believed (default: none; the peer address counts)"),
	}
}

// guard is the wired guard of the public listeners and what runs beside it.
type guard struct {
	wrap       func(route string, next http.Handler) http.Handler // Config.Guard; nil when off
	background []func(ctx context.Context)                        // run until shutdown
	closers    []func() error                                     // after the background work
	// apiStatus is the status of what the guard depends on (Redis), for
	// the API component; nil when it depends on nothing.
	apiStatus  func() cdnapi.Status
	collectors []prometheus.Collector
	keys       *auth.Verifier // nil: keys are not verified
	// clients finds a request's client address, believing
	// --trusted-proxies: the status streams count by it too.
	clients *httpapi.ClientResolver
}

// build checks the flags and wires the key verifier, the limiter and the
// client resolver. With --auth required it loads the keys once before
// serving, so a store it cannot read stops serve from starting.
func (f guardFlags) build(ctx context.Context, st cdnapi.KeyStore, logger *slog.Logger) (*guard, error) {
	g := &guard{}
	var cfg httpapi.GuardConfig
	switch *f.auth {
	case "off":
	case "required":
		v, err := g.addVerifier(ctx, st, logger)
		if err != nil {
			return nil, err
		}
		cfg.Keys = v
	default:
		return nil, usageError{fmt.Sprintf("--auth must be off or required, not %q", *f.auth)}
	}
	trusted, err := httpapi.ParsePrefixes(*f.trustedProxies)
	if err != nil {
		return nil, usageError{"--trusted-proxies: " + err.Error()}
	}
	cfg.Clients = httpapi.NewClientResolver(trusted)
	g.clients = cfg.Clients

	rate, burst := *f.rateLimit, *f.rateBurst
	switch {
	case rate < 0 || burst < 0:
		return nil, usageError{"--rate-limit and --rate-burst must not be negative"}
	case rate == 0 && burst > 0:
		return nil, usageError{"--rate-burst needs --rate-limit"}
	case rate > 0:
		if burst == 0 {
			burst = 2 * rate
		}
		policy := ratelimit.Policy{Rate: rate, Burst: burst}
		if *f.rateRedis == "" {
			cfg.Limiter = ratelimit.NewMemory(policy)
			break
		}
		routeRedisLog(logger)
		r, err := ratelimit.NewRedis(*f.rateRedis, policy, ratelimit.RedisOptions{Timeout: *f.redisTimeout, Logger: logger})
		if err != nil {
			return nil, usageError{"--rate-limit-redis: " + err.Error()}
		}
		cfg.Limiter = r
		g.background = append(g.background, r.Run)
		g.closers = append(g.closers, r.Close)
		g.apiStatus = r.Status
		g.collectors = append(g.collectors, r.Collectors()...)
	}
	if *f.rateRedis != "" && rate == 0 {
		return nil, usageError{"--rate-limit-redis needs --rate-limit"}
	}
	if cfg.Keys != nil || cfg.Limiter != nil {
		g.wrap = httpapi.NewGuard(cfg)
	}
	logger.Info("access", "auth", *f.auth, "rate_limit", rate, "rate_burst", burst,
		"rate_limit_redis", *f.rateRedis != "", "trusted_proxies", len(trusted))
	return g, nil
}

// addVerifier makes the verifier of API keys, loads the keys once, and
// runs its refreshes with the guard's background work.
func (g *guard) addVerifier(ctx context.Context, st cdnapi.KeyStore, logger *slog.Logger) (*auth.Verifier, error) {
	v := auth.New(st, auth.Config{Logger: logger})
	if err := v.Refresh(ctx); err != nil {
		return nil, fmt.Errorf("load the API keys: %w", err)
	}
	g.keys = v
	g.background = append(g.background, v.Run)
	return v, nil
}

// start runs the background work of the guard until the returned stop is
// called; stop waits for it to end (the verifier writes its last uses).
func (g *guard) start(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	for _, run := range g.background {
		wg.Go(func() { run(ctx) })
	}
	return func() {
		cancel()
		wg.Wait()
		for _, c := range g.closers {
			c()
		}
	}
}
