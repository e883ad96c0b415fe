package httpapi

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/redis/go-redis/v9"

	"github.com/cdnapi/cdnapi/internal/auth"
	"github.com/cdnapi/cdnapi/internal/ratelimit"
	"github.com/cdnapi/cdnapi/internal/redistest"
	"github.com/cdnapi/cdnapi/internal/storetest"
	"github.com/cdnapi/cdnapi/internal/teststore"
)

// BenchmarkGuard measures what keys and rate limits cost on the hot page:
// the first page of files, served from the page cache, so that the guard's
// share is as large as it can be. The cases run in one run, to be compared
// as ratios:
//
//	off          no keys, no limits
//	auth+memory  --auth required --rate-limit (buckets in memory)
//	paired       off and auth+memory alternately, with their ratio of
//	             processor time
//	paired-http  the same over HTTP on loopback, client included
//	auth+redis   --auth required --rate-limit --rate-limit-redis; it also
//	             reports the Redis round trips (EVALSHA and EVAL commands)
//	             per request
//
//	go test ./internal/httpapi -run '^$' -bench BenchmarkGuard -count 5
func BenchmarkGuard(b *testing.B) {
	st := teststore.SQLite(b)
	ctx := context.Background()
	must(b, storetest.Writer(st).PutFiles(ctx, storetest.Files(100, DefaultProject, 1)))
	key, rec := auth.NewKey(DefaultProject, cdnapi.ScopeRead, "bench", time.Now(), time.Time{})
	must(b, st.CreateKey(ctx, rec))
	verifier := auth.New(st, auth.Config{})
	must(b, verifier.Refresh(ctx))
	// A limit no benchmark reaches, since it refills faster than one client
	// can ask: every request is counted and allowed.
	policy := ratelimit.Policy{Rate: 1_000_000, Burst: 1000}

	handler := func(guard func(string, http.Handler) http.Handler) http.Handler {
		cfg := storeConfig(b, st)
		cfg.PageCacheTTL, cfg.Guard = time.Hour, guard
		return NewAPI(cfg)
	}
	run := func(b *testing.B, h http.Handler, header string) {
		req := httptest.NewRequest(http.MethodGet, "/api/v1/files?limit=20", nil)
		if header != "" {
			req.Header.Set("Authorization", header)
		}
		w := &discardWriter{header: http.Header{}}
		b.ReportAllocs()
		cpu0 := processCPU(b)
		for b.Loop() {
			clear(w.header)
			h.ServeHTTP(w, req)
		}
		b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		if w.status != http.StatusOK {
			b.Fatalf("status %d", w.status)
		}
	}

	off := handler(nil)
	guarded := handler(NewGuard(GuardConfig{Keys: verifier, Limiter: ratelimit.NewMemory(policy)}))
	b.Run("off", func(b *testing.B) { run(b, off, "") })
	b.Run("auth+memory", func(b *testing.B) { run(b, guarded, "Bearer "+key) })
	// paired serves off and auth+memory in alternate blocks of requests,
	// and reports the processor time of each (the process's, so garbage
	// collection counts) and their ratio. The machine's load changes how
	// long a request waits for a processor, which separate runs cannot
	// tell from cost; the processor time a request takes, in blocks that
	// alternate every few hundred microseconds, sees one machine.
	b.Run("paired", func(b *testing.B) {
		plain := httptest.NewRequest(http.MethodGet, "/api/v1/files?limit=20", nil)
		keyed := httptest.NewRequest(http.MethodGet, "/api/v1/files?limit=20", nil)
		keyed.Header.Set("Authorization", "Bearer "+key)
		w := &discardWriter{header: http.Header{}}
		paired(b, func() { clear(w.header); off.ServeHTTP(w, plain) },
			func() { clear(w.header); guarded.ServeHTTP(w, keyed) })
	})
	// paired-http is paired over real HTTP on loopback, as a client sees
	// it: the client's processor time counts too, for both sides alike.
	b.Run("paired-http", func(b *testing.B) {
		servers := [2]*httptest.Server{httptest.NewServer(off), httptest.NewServer(guarded)}
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
		get := func(srv *httptest.Server, auth string) func() {
			req, err := http.NewRequest(http.MethodGet, srv.URL+"/api/v1/files?limit=20", nil)
			must(b, err)
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			return func() {
				res, err := client.Do(req)
				must(b, err)
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != http.StatusOK {
					b.Fatalf("status %d", res.StatusCode)
				}
			}
		}
		paired(b, get(servers[0], ""), get(servers[1], "Bearer "+key))
		for _, srv := range servers {
			srv.Close()
		}
	})
	b.Run("auth+redis", func(b *testing.B) {
		srv := redistest.Start(b)
		lim, err := ratelimit.NewRedis(srv.URL, policy, ratelimit.RedisOptions{Timeout: time.Second})
		must(b, err)
		b.Cleanup(func() { lim.Close() })
		client := redis.NewClient(&redis.Options{Addr: srv.Addr})
		b.Cleanup(func() { client.Close() })
		before := redisScriptCalls(b, client)
		run(b, handler(NewGuard(GuardConfig{Keys: verifier, Limiter: lim})), "Bearer "+key)
		// Wall time (ns/op) includes the wait for Redis; cpu-ns/op does
		// not count Redis's own work, which runs in its process.
		b.ReportMetric(float64(redisScriptCalls(b, client)-before)/float64(b.N), "redis-trips/op")
	})
}

// redisScriptCalls returns the number of EVALSHA and EVAL commands the
// Redis server has run: each is one round trip of a limiter.
func redisScriptCalls(b *testing.B, c *redis.Client) int {
	info, err := c.Info(context.Background(), "commandstats").Result()
	must(b, err)
	n := 0
	for line := range strings.Lines(info) {
		for _, cmd := range []string{"cmdstat_evalsha:calls=", "cmdstat_eval:calls="} {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), cmd); ok {
				calls, err := strconv.Atoi(v[:strings.IndexByte(v, ',')])
				must(b, err)
				n += calls
			}
		}
	}
	return n
}

// paired runs off and guarded in alternate blocks, one request per
// iteration, and reports each one's processor time per request and their
// ratio.
func paired(b *testing.B, off, guarded func()) {
	const block = 128
	serve := [2]func(){off, guarded}
	var cpu [2]time.Duration
	var n [2]int
	which, i := 0, 0
	t0 := processCPU(b)
	for b.Loop() {
		serve[which]()
		n[which]++
		if i++; i == block {
			t1 := processCPU(b)
			cpu[which] += t1 - t0
			t0, i, which = t1, 0, 1-which
		}
	}
	if n[0] < block || n[1] < block {
		return // too short to compare: the calibration rounds
	}
	offNs := float64(cpu[0].Nanoseconds()) / float64(n[0])
	guardedNs := float64(cpu[1].Nanoseconds()) / float64(n[1])
	b.ReportMetric(offNs, "off-cpu-ns/req")
	b.ReportMetric(guardedNs, "guarded-cpu-ns/req")
	b.ReportMetric(guardedNs/offNs, "guarded/off")
}

// processCPU returns the processor time this process has used, user and
// system, in all its threads.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	must(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
