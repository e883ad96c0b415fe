package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/api"
	"github.com/cdnapi/cdnapi/internal/auth"
	"github.com/cdnapi/cdnapi/internal/health"
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
//	paired       off and auth+memory alternately, with their ratio
//	auth+redis   --auth required --rate-limit --rate-limit-redis; it also
//	             reports the Redis round trips (EVALSHA and EVAL commands)
//	             per request
//
//	go test ./internal/httpapi -run '^$' -bench BenchmarkGuard -count 5
func BenchmarkGuard(b *testing.B) {
	st := teststore.SQLite(b)
	ctx := context.Background()
	must(b, storetest.Writer(st).PutFiles(ctx, storetest.Files(100, DefaultProject, 1)))
	secret, err := st.CursorSecret(ctx)
	must(b, err)
	cursors, err := cdnapi.NewCursorCodec(secret)
	must(b, err)
	key, rec := auth.NewKey(DefaultProject, "bench", time.Now(), time.Time{})
	must(b, st.CreateKey(ctx, rec))
	verifier := auth.New(st, auth.Config{})
	must(b, verifier.Refresh(ctx))
	// A limit no benchmark reaches: every request is counted and allowed.
	policy := ratelimit.Policy{Rate: 1_000_000_000, Burst: 1_000_000_000}

	handler := func(guard func(string, http.Handler) http.Handler) http.Handler {
		return NewAPI(Config{Store: st, Cursors: cursors, Status: health.New(st, health.Config{}),
			OpenAPI: api.JSON(), PageCacheTTL: time.Hour, Guard: guard})
	}
	run := func(b *testing.B, h http.Handler, header string) {
		req := httptest.NewRequest(http.MethodGet, "/api/v1/files?limit=20", nil)
		if header != "" {
			req.Header.Set("Authorization", header)
		}
		w := &discardWriter{header: http.Header{}}
		b.ReportAllocs()
		for b.Loop() {
			clear(w.header)
			h.ServeHTTP(w, req)
		}
		if w.status != http.StatusOK {
			b.Fatalf("status %d", w.status)
		}
	}

	off := handler(nil)
	guarded := handler(NewGuard(GuardConfig{Keys: verifier, Limiter: ratelimit.NewMemory(policy)}))
	b.Run("off", func(b *testing.B) { run(b, off, "") })
	b.Run("auth+memory", func(b *testing.B) { run(b, guarded, "Bearer "+key) })
	// paired alternates the two, request by request, and reports each one's
	// time and their ratio: on a machine whose load varies, two separate
	// runs can differ more than the guard costs, but a pair sees one load.
	b.Run("paired", func(b *testing.B) {
		plain := httptest.NewRequest(http.MethodGet, "/api/v1/files?limit=20", nil)
		keyed := httptest.NewRequest(http.MethodGet, "/api/v1/files?limit=20", nil)
		keyed.Header.Set("Authorization", "Bearer "+key)
		w := &discardWriter{header: http.Header{}}
		var tOff, tGuarded time.Duration
		serve := func(h http.Handler, r *http.Request) time.Duration {
			clear(w.header)
			t0 := time.Now()
			h.ServeHTTP(w, r)
			return time.Since(t0)
		}
		i := 0
		for b.Loop() {
			if i++; i%2 == 0 { // alternate which goes first
				tOff += serve(off, plain)
				tGuarded += serve(guarded, keyed)
			} else {
				tGuarded += serve(guarded, keyed)
				tOff += serve(off, plain)
			}
		}
		b.ReportMetric(float64(tOff.Nanoseconds())/float64(b.N), "off-ns/req")
		b.ReportMetric(float64(tGuarded.Nanoseconds())/float64(b.N), "guarded-ns/req")
		b.ReportMetric(float64(tGuarded)/float64(tOff), "guarded/off")
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
