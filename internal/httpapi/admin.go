package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cdnapi/cdnapi"
)

// Pinger is the part of the store that the readiness probe uses.
type Pinger interface {
	Ping(ctx context.Context) error
}

// AdminConfig holds the dependencies of the admin listener.
type AdminConfig struct {
	// Store is pinged by /readyz. Required.
	Store Pinger
	// Gatherer is served at /metrics. Nil leaves /metrics out.
	Gatherer prometheus.Gatherer
	// Logger receives failed pings. Default: discard.
	Logger *slog.Logger
	// AccessLog receives one line per request, at Debug level: probes and
	// scrapes are frequent. Default: Logger.
	AccessLog *slog.Logger
	// Metrics records the admin requests too. Nil records nothing.
	Metrics *Metrics
	// PingTimeout bounds the ping of /readyz. Default DefaultPingTimeout.
	PingTimeout time.Duration
	// Draining, when set and reporting true, makes /readyz answer 503 so
	// that load balancers stop sending traffic during a graceful shutdown.
	Draining func() bool
}

// DefaultPingTimeout is the ping deadline of /readyz when
// AdminConfig.PingTimeout is zero: shorter than a typical probe's own
// timeout, so the probe gets a clear 503 rather than giving up.
const DefaultPingTimeout = time.Second

// NewAdmin returns the handler of the admin listener: /healthz, /readyz,
// /metrics and /debug/pprof/. It is meant for operators and their tools
// only, on an address that is not exposed publicly. It panics if Store is
// nil.
func NewAdmin(cfg AdminConfig) http.Handler {
	if cfg.Store == nil {
		panic("httpapi: NewAdmin needs AdminConfig.Store")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.AccessLog == nil {
		cfg.AccessLog = cfg.Logger
	}
	if cfg.PingTimeout <= 0 {
		cfg.PingTimeout = DefaultPingTimeout
	}
	mux := http.NewServeMux()
	addAdminRoutes(mux, cfg)
	h := recoverPanics(mux)
	h = logRequests(cfg.AccessLog, slog.LevelDebug, cfg.Metrics, h)
	return withRequest("admin", cfg.Logger, nil, h)
}

// handleHealthz answers 200 while the process can serve HTTP at all.
func handleHealthz() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeProbe(w, r, http.StatusOK)
	})
}

// handleReadyz answers 200 when the store answers a ping within the
// timeout (degraded too: it still serves), and 503 otherwise or while
// draining. Why it failed goes to the log, never into the body.
func handleReadyz(cfg AdminConfig) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if cfg.Draining != nil && cfg.Draining() {
			writeProbe(w, r, http.StatusServiceUnavailable)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), cfg.PingTimeout)
		err := cfg.Store.Ping(ctx)
		cancel()
		if err != nil && !errors.Is(err, cdnapi.ErrDegraded) { // degraded still serves
			cfg.Logger.LogAttrs(r.Context(), slog.LevelWarn, "readiness ping failed",
				slog.String("request_id", loggedRequestID(r.Context())), slog.Any("err", err))
			writeProbe(w, r, http.StatusServiceUnavailable)
			return
		}
		writeProbe(w, r, http.StatusOK)
	})
}

// writeProbe answers a probe with status and a one-word body.
func writeProbe(w http.ResponseWriter, r *http.Request, status int) {
	body := "ok\n"
	if status != http.StatusOK {
		body = "unavailable\n"
	}
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		w.Write([]byte(body))
	}
}

// MaxProfileSeconds bounds the seconds of a profile of the admin address:
// whoever reaches it can make the process profile itself, which costs CPU,
// and must not hold the profiler for as long as they like. It is below the
// listeners' write timeout (30 s), past which net/http would cut the
// answer.
const MaxProfileSeconds = 20

// defaultProfileSeconds is the length of a CPU profile that asks for none
// (pprof's own default, 30 s, is past the write timeout).
const defaultProfileSeconds = 10

// profileGate lets one lasting profile run at a time.
type profileGate struct{ busy atomic.Bool }

// bound serves h's profiles when their seconds (def when not given, or
// none when def is 0: a snapshot, which costs no time) are 1 to
// MaxProfileSeconds and no other lasting profile runs; else 400, or 429
// with Retry-After while one runs.
func (g *profileGate) bound(h http.Handler, def int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		s := q.Get("seconds")
		if s == "" && def == 0 {
			h.ServeHTTP(w, r)
			return
		}
		if s == "" {
			s = strconv.Itoa(def)
			q.Set("seconds", s)
			r.URL.RawQuery = q.Encode()
		}
		if n, err := strconv.Atoi(s); err != nil || n < 1 || n > MaxProfileSeconds {
			http.Error(w, fmt.Sprintf("seconds must be a whole number from 1 to %d", MaxProfileSeconds), http.StatusBadRequest)
			return
		}
		if !g.busy.CompareAndSwap(false, true) {
			w.Header().Set("Retry-After", strconv.Itoa(MaxProfileSeconds))
			http.Error(w, "another profile is running; one runs at a time", http.StatusTooManyRequests)
			return
		}
		defer g.busy.Store(false)
		h.ServeHTTP(w, r)
	})
}
