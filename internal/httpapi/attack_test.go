package httpapi

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/ratelimit"
)

// The tests of this file are those of issue 19: what a hostile client
// tried, each failing before the change it checks.

// TestNoKeyInLogs sends a valid key, and a made-up one, in every place a
// client could put it, and checks that no log line shows either.
func TestNoKeyInLogs(t *testing.T) {
	e, k := newGuardedEnv(t, true, ratelimit.Policy{}, "")
	guess := "cdk_" + strings.Repeat("G", 32)
	for _, key := range []string{k.def, guess} {
		esc := url.QueryEscape(key)
		for _, target := range []string{
			"/api/v1/files?limit=3&access_token=" + esc,
			"/api/v1/files?key=" + esc,
			"/api/v1/files?api_key=" + esc + "&limit=2",
			"/api/v1/files?whatever=" + esc,
			"/api/v1/files?" + esc,
			"/api/v1/files?limit=" + esc,
			"/api/v1/files?cursor=" + esc,
			"/api/v1/files?token=" + strings.ReplaceAll(esc, "_", "%5F"),
			"/api/v1/files/" + esc,
			"/api/v1/status?key=" + esc,
		} {
			e.do(t, onAPI, http.MethodGet, target, nil)
		}
		e.do(t, onAPI, http.MethodGet, "/api/v1/files", hdr("User-Agent", "curl "+key, "Authorization", "Bearer "+key))
		e.do(t, onAPI, http.MethodGet, "/api/v1/files", hdr("X-Request-Id", key))
		e.do(t, onEdge, http.MethodGet, "/api/v1/regions", hdr("X-Api-Key", key, "Authorization", "Bearer "+key))
	}
	logs := e.logs.String()
	if n := len(e.logLines()); n < 20 {
		t.Fatalf("%d access-log lines", n)
	}
	for _, key := range []string{k.def, guess} {
		if i := strings.Index(logs, key[4:]); i >= 0 {
			t.Errorf("a key reached the log: …%s…", logs[max(0, i-200):min(len(logs), i+50)])
		}
	}
	if !strings.Contains(logs, `"path":"/api/v1/files?limit=3\u0026access_token=xxxxx"`) &&
		!strings.Contains(logs, `"path":"/api/v1/files?limit=3&access_token=xxxxx"`) {
		t.Errorf("the redacted parameter is not in the log:\n%s", logs)
	}
}

// TestKeyedAnswersArePrivate checks that with keys required, every answer
// that needed a key is private and varies on Authorization, 304s too, so
// that a shared cache never gives it to a client without the key.
func TestKeyedAnswersArePrivate(t *testing.T) {
	e, k := newGuardedEnv(t, true, ratelimit.Policy{}, "")
	for _, tc := range []struct{ listener, path, cc string }{
		{onAPI, "/api/v1/files", "private, max-age=60"},
		{onEdge, "/api/v1/regions", "private, max-age=300"},
		{onEdge, "/api/v1/assets", "private, max-age=60"},
		{onEdge, "/api/v1/assets?region=FRA1&limit=2", "private, max-age=60"},
	} {
		res, _ := e.do(t, tc.listener, http.MethodGet, tc.path, bearer(k.def))
		etag := res.Header.Get("ETag")
		res304, _ := e.do(t, tc.listener, http.MethodGet, tc.path, hdr("Authorization", "Bearer "+k.def, "If-None-Match", etag))
		for _, r := range []*http.Response{res, res304} {
			if cc := r.Header.Get("Cache-Control"); cc != tc.cc || !hasVary(r.Header, "Authorization") {
				t.Errorf("%s: %d with Cache-Control %q, Vary %q", tc.path, r.StatusCode, cc, r.Header.Values("Vary"))
			}
		}
		if res304.StatusCode != http.StatusNotModified {
			t.Errorf("%s: If-None-Match answered %d", tc.path, res304.StatusCode)
		}
	}
	// Without keys nothing is private.
	e, _ = newGuardedEnv(t, false, ratelimit.Policy{Rate: 100, Burst: 100}, "")
	if res, _ := e.get(t, onEdge, "/api/v1/regions"); res.Header.Get("Cache-Control") != "public, max-age=300" {
		t.Errorf("regions without keys: Cache-Control %q", res.Header.Get("Cache-Control"))
	}
}

// TestTwoAuthorizationHeaders checks that a request with two credentials is
// refused as ambiguous, whichever of them is valid.
func TestTwoAuthorizationHeaders(t *testing.T) {
	e, k := newGuardedEnv(t, true, ratelimit.Policy{}, "")
	for _, h := range []http.Header{
		{"Authorization": {"Bearer " + k.def, "Bearer cdk_guess"}},
		{"Authorization": {"Bearer cdk_guess", "Bearer " + k.def}},
		{"Authorization": {"Bearer " + k.def, "Bearer " + k.other}},
	} {
		res, body := e.do(t, onAPI, http.MethodGet, "/api/v1/files", h)
		if eb := decode[errorBody](t, body); res.StatusCode != http.StatusBadRequest ||
			eb.Error.Code != cdnapi.CodeParameterInvalid || !strings.Contains(eb.Error.Message, "Authorization") {
			t.Errorf("%q: %d %s", h["Authorization"], res.StatusCode, body)
		}
	}
}

// TestIPv6ClientsBucketedBy64 checks that requests without a key from many
// addresses of one IPv6 /64 share one bucket, and that another /64, or an
// IPv4 address, has its own.
func TestIPv6ClientsBucketedBy64(t *testing.T) {
	e, _ := newGuardedEnv(t, true, ratelimit.Policy{Rate: 1, Burst: 3}, "127.0.0.0/8,::1")
	status := func(client string) int {
		res, _ := e.do(t, onAPI, http.MethodGet, "/api/v1/files", hdr("X-Forwarded-For", client, "Authorization", "Bearer cdk_guess"))
		return res.StatusCode
	}
	var allowed int
	start := time.Now()
	for i := range 40 {
		if status(fmt.Sprintf("2001:db8:1:2:%x::%x", i, i+1)) != http.StatusTooManyRequests {
			allowed++
		}
	}
	// One bucket: the burst, and a token a second since.
	if limit := 3 + int(time.Since(start).Seconds()) + 1; allowed > limit {
		t.Errorf("40 guesses from one /64 in %v: %d let through, want at most %d", time.Since(start), allowed, limit)
	}
	for _, other := range []string{"2001:db8:1:3::1", "192.0.2.1", "192.0.2.2"} {
		if got := status(other); got != http.StatusUnauthorized {
			t.Errorf("%s, in a bucket of its own, answered %d", other, got)
		}
	}
}

// TestRateLimitPolicyStatesTheLimiter runs the in-memory limiter on a clock
// of its own, a client asking every millisecond for three seconds, and
// checks that RateLimit-Policy says what it did: q per w is its steady
// rate, so that what it let through is at least q×T/w and at most that
// plus the burst, which RateLimit's r gives at the start.
func TestRateLimitPolicyStatesTheLimiter(t *testing.T) {
	for _, p := range []ratelimit.Policy{{Rate: 100, Burst: 50}, {Rate: 50, Burst: 100}, {Rate: 5, Burst: 10},
		{Rate: 3, Burst: 5}, {Rate: 1, Burst: 1}, {Rate: 10, Burst: 1}} {
		lim := ratelimit.NewMemory(p)
		start := time.Unix(1e9, 0)
		first := lim.Take(t.Context(), "c", start)
		var q, w int
		if _, err := fmt.Sscanf(newPolicyHeader(first).value[0], `"default";q=%d;w=%d`, &q, &w); err != nil {
			t.Fatal(err)
		}
		const seconds = 3
		allowed := 1
		for ms := 1; ms < seconds*1000; ms++ {
			if lim.Take(t.Context(), "c", start.Add(time.Duration(ms)*time.Millisecond)).Allowed {
				allowed++
			}
		}
		steady := q * seconds / w
		if allowed < steady || allowed > steady+first.Remaining+1 {
			t.Errorf("rate %d, burst %d: q=%d;w=%d, r=%d at first, and %d allowed in %ds; want %d to %d",
				p.Rate, p.Burst, q, w, first.Remaining, allowed, seconds, steady, steady+first.Remaining+1)
		}
	}
}

// TestPublicRoutesCached checks that the public routes rendered per request
// are served from the page cache within its TTL (issue 19: a client in a
// loop on /status rendered it every time), and that what they show from
// memory still shows at once.
func TestPublicRoutesCached(t *testing.T) {
	e := newEnv(t, func(cfg *Config) { cfg.PageCacheTTL = time.Hour })
	hits := func() float64 { return testutil.ToFloat64(e.metrics.cacheCounters("api").hits) }
	for _, target := range []string{"/api/v1/status", "/api/v1/status/incidents?limit=2", "/api/v1/status/uptime", "/status", "/status?utm=x"} {
		before := hits()
		for range 5 {
			res, err := e.client.Get(e.apiURL + target)
			must(t, err)
			res.Body.Close()
			if res.StatusCode != 200 {
				t.Fatalf("%s: %d", target, res.StatusCode)
			}
		}
		if got := hits() - before; got < 4 {
			t.Errorf("%s: %v of 5 requests served from the cache, want at least 4", target, got)
		}
	}
	// A change of the live states shows at once in both.
	e.store.Close()
	e.status.Evaluate(t.Context())
	if _, body := e.get(t, onAPI, "/api/v1/status"); !strings.Contains(string(body), `"major_outage"`) {
		t.Errorf("the status document did not show the storage outage at once: %s", body)
	}
	if page := getPage(t, e, "/status", "no-store"); !strings.Contains(page, "Major outage") {
		t.Error("the status page did not show the storage outage at once")
	}
}

// TestNoBareKeyInLogs is issue 36's: a key's 32 secret characters reached
// the log when its "cdk_" was missing, or percent-encoded in a way other
// than "%5F" ("%63dk_", or encoded twice), in the query, the path, the
// User-Agent or the X-Request-Id. Decoded before matching, and a bare run
// of a key's shape is redacted too; an ID of the API (a file's 32 hex
// digits, a request's 20 characters) is not.
func TestNoBareKeyInLogs(t *testing.T) {
	e, k := newGuardedEnv(t, true, ratelimit.Policy{}, "")
	secret := k.def[len("cdk_"):]
	pct := func(s string) string { // every byte percent-encoded
		var b strings.Builder
		for i := 0; i < len(s); i++ {
			fmt.Fprintf(&b, "%%%02X", s[i])
		}
		return b.String()
	}
	for _, target := range []string{
		"/api/v1/files?limit=" + secret,
		"/api/v1/files?limit=%63dk_" + secret,
		"/api/v1/files?limit=%2563dk_" + secret, // encoded twice
		"/api/v1/files?cursor=" + secret,
		"/api/v1/files?whatever=1&" + secret,
		"/api/v1/files?" + pct("cdk_"+secret) + "=1",
		"/api/v1/files?limit=" + pct(secret),
		"/api/v1/files/" + secret,
		"/api/v1/files/%63dk_" + secret,
		"/api/v1/files/x." + secret + ".png",
	} {
		e.do(t, onAPI, http.MethodGet, target, nil)
	}
	e.do(t, onAPI, http.MethodGet, "/api/v1/files", hdr("User-Agent", "client/1 ("+secret+")"))
	e.do(t, onAPI, http.MethodGet, "/api/v1/files", hdr("X-Request-Id", secret))
	e.do(t, onAPI, http.MethodGet, "/api/v1/files", hdr("X-Request-Id", "abc."+secret))
	// Not keys: kept as they are.
	fileID := "fil_" + strings.Repeat("0123456789abcdef", 2)
	e.do(t, onAPI, http.MethodGet, "/api/v1/files/"+fileID, nil)
	e.do(t, onAPI, http.MethodGet, "/api/v1/files", hdr("X-Request-Id", "req_ABCDEFGHIJ0123456789"))

	logs := e.logs.String()
	if n := len(e.logLines()); n < 15 {
		t.Fatalf("%d access-log lines", n)
	}
	// The secret as sent, and in the spellings of the fully encoded
	// targets above, which a search for the bare secret would not find.
	for _, form := range []string{secret, pct(secret), strings.ToLower(pct(secret))} {
		for i := 0; ; {
			j := strings.Index(logs[i:], form)
			if j < 0 {
				break
			}
			j += i
			t.Errorf("the key's secret reached the log: …%s…", logs[max(0, j-200):min(len(logs), j+50)])
			i = j + len(form)
		}
	}
	for _, kept := range []string{fileID, "req_ABCDEFGHIJ0123456789"} {
		if !strings.Contains(logs, kept) {
			t.Errorf("%s is not in the log: an ID of the API was taken for a key", kept)
		}
	}
}
