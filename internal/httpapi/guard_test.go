package httpapi

import (
	"context"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/auth"
	"github.com/cdnapi/cdnapi/internal/ratelimit"
)

// The tests of this file run the real guard with the real verifier of
// internal/auth over the keys of the environment's SQLite store, and the
// real in-memory limiter of internal/ratelimit.

// guardKeys are the keys of a guarded environment.
type guardKeys struct {
	def, other, revoked, expired string // def lists DefaultProject, other otherProject
	upload, edge                 string // valid keys of DefaultProject whose scope is not read
	verifier                     *auth.Verifier
}

// newGuardedEnv builds an environment whose guard requires keys (when
// withKeys) and limits requests by policy (when its Rate is not zero). The
// page cache is on, for a minute, so that isolation is tested through it.
func newGuardedEnv(t *testing.T, withKeys bool, policy ratelimit.Policy, trusted string) (*env, *guardKeys) {
	t.Helper()
	keys := &guardKeys{}
	e := newEnv(t, func(c *Config) {
		c.PageCacheTTL = time.Minute
		var gc GuardConfig
		if withKeys {
			st := c.Store.(cdnapi.KeyStore)
			now := time.Now()
			createScoped := func(project string, scope cdnapi.KeyScope, expires time.Time) (string, cdnapi.APIKey) {
				key, rec := auth.NewKey(project, scope, "", now.Add(-time.Hour), expires)
				must(t, st.CreateKey(context.Background(), rec))
				return key, rec
			}
			create := func(project string, expires time.Time) (string, cdnapi.APIKey) {
				return createScoped(project, cdnapi.ScopeRead, expires)
			}
			keys.upload, _ = createScoped(DefaultProject, cdnapi.ScopeUpload, time.Time{})
			keys.edge, _ = createScoped(DefaultProject, cdnapi.ScopeEdge, time.Time{})
			keys.def, _ = create(DefaultProject, time.Time{})
			keys.other, _ = create(otherProject, time.Time{})
			keys.expired, _ = create(DefaultProject, now.Add(-time.Minute))
			var rec cdnapi.APIKey
			keys.revoked, rec = create(DefaultProject, time.Time{})
			must(t, st.RevokeKey(context.Background(), rec.ID, now))
			keys.verifier = auth.New(st, auth.Config{})
			must(t, keys.verifier.Refresh(context.Background()))
			gc.Keys = keys.verifier
		}
		if policy.Rate > 0 {
			gc.Limiter = ratelimit.NewMemory(policy)
		}
		prefixes, err := ParsePrefixes(trusted)
		must(t, err)
		gc.Clients = NewClientResolver(prefixes)
		c.Guard = NewGuard(gc)
	})
	return e, keys
}

func bearer(key string) http.Header { return hdr("Authorization", "Bearer "+key) }

func TestGuardAuthentication(t *testing.T) {
	e, k := newGuardedEnv(t, true, ratelimit.Policy{}, "")
	for _, tc := range []struct {
		name, listener, path string
		header               http.Header
		status               int
		code                 string
	}{
		{"no key", onAPI, "/api/v1/files", nil, 401, cdnapi.CodeAuthenticationRequired},
		{"no key, regions", onEdge, "/api/v1/regions", nil, 401, cdnapi.CodeAuthenticationRequired},
		{"no key, assets", onEdge, "/api/v1/assets", nil, 401, cdnapi.CodeAuthenticationRequired},
		{"basic credentials", onAPI, "/api/v1/files", hdr("Authorization", "Basic dXNlcjpwYXNz"), 401, cdnapi.CodeAuthenticationRequired},
		{"unknown key", onAPI, "/api/v1/files", bearer("cdk_" + strings.Repeat("A", 32)), 401, cdnapi.CodeAPIKeyInvalid},
		{"malformed key", onAPI, "/api/v1/files", bearer("<script>"), 401, cdnapi.CodeAPIKeyInvalid},
		{"revoked key", onAPI, "/api/v1/files", bearer(k.revoked), 401, cdnapi.CodeAPIKeyInvalid},
		{"expired key", onEdge, "/api/v1/assets", bearer(k.expired), 401, cdnapi.CodeAPIKeyInvalid},
		{"valid key", onAPI, "/api/v1/files", bearer(k.def), 200, ""},
		{"lower-case scheme", onEdge, "/api/v1/regions", hdr("Authorization", "bearer "+k.other), 200, ""},
		{"status is public", onAPI, "/api/v1/status", nil, 200, ""},
		{"incidents are public", onAPI, "/api/v1/status/incidents", nil, 200, ""},
		{"the document is public", onEdge, "/api/v1/openapi.json", nil, 200, ""},
		{"preflight needs no key", onAPI, "/api/v1/files", hdr("Origin", "https://a.example", "Access-Control-Request-Method", "GET"), 204, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			method := http.MethodGet
			if tc.status == 204 {
				method = http.MethodOptions
			}
			res, body := e.do(t, tc.listener, method, tc.path, tc.header)
			if res.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tc.status, body)
			}
			if tc.code == "" {
				return
			}
			if eb := decode[errorBody](t, body); eb.Error.Code != tc.code || eb.Error.Type != "authentication_error" {
				t.Errorf("error %s/%s, want authentication_error/%s", eb.Error.Type, eb.Error.Code, tc.code)
			}
			if w := res.Header.Get("WWW-Authenticate"); !strings.HasPrefix(w, "Bearer ") {
				t.Errorf("WWW-Authenticate %q", w)
			}
			if strings.Contains(string(body), "script") {
				t.Errorf("the body echoes the key: %s", body)
			}
		})
	}
}

// TestGuardScope checks that the lists take read keys only: a valid key of
// another scope gets 403 permission_denied, in the documented error shape,
// with a message that says which key would do, on every list and either
// listener, and no rate-limit or authentication challenge.
func TestGuardScope(t *testing.T) {
	e, k := newGuardedEnv(t, true, ratelimit.Policy{}, "")
	for _, tc := range []struct {
		name, listener, path, key, scope, lists string
	}{
		{"upload key, files", onAPI, "/api/v1/files", k.upload, "upload", "files"},
		{"upload key, regions", onEdge, "/api/v1/regions", k.upload, "upload", "regions"},
		{"edge key, assets", onEdge, "/api/v1/assets", k.edge, "edge", "assets"},
		{"edge key, files", onAPI, "/api/v1/files", k.edge, "edge", "files"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, method := range []string{http.MethodGet, http.MethodHead} {
				res, body := e.do(t, tc.listener, method, tc.path, bearer(tc.key))
				if res.StatusCode != http.StatusForbidden {
					t.Fatalf("%s: status %d, want 403: %s", method, res.StatusCode, body)
				}
				if res.Header.Get("WWW-Authenticate") != "" || res.Header.Get("Cache-Control") != "no-store" {
					t.Errorf("%s: WWW-Authenticate %q, Cache-Control %q; want none and no-store", method,
						res.Header.Get("WWW-Authenticate"), res.Header.Get("Cache-Control"))
				}
				if method == http.MethodHead {
					continue
				}
				eb := decode[errorBody](t, body)
				if eb.Error.Code != cdnapi.CodePermissionDenied || eb.Error.Type != "invalid_request_error" || eb.Error.RequestID == "" {
					t.Errorf("error %+v, want invalid_request_error/permission_denied with a request ID", eb.Error)
				}
				want := "this key's scope is " + tc.scope + "; listing " + tc.lists +
					" needs a key of scope read: cdnapi keys create --project " + DefaultProject + " --scope read"
				if eb.Error.Message != want {
					t.Errorf("message %q, want %q", eb.Error.Message, want)
				}
			}
		})
	}
	// A read key of the same project lists, and the public routes take
	// any key's scope as no key at all.
	if res, body := e.do(t, onAPI, http.MethodGet, "/api/v1/files", bearer(k.def)); res.StatusCode != 200 {
		t.Errorf("read key: status %d, want 200: %s", res.StatusCode, body)
	}
	if res, body := e.do(t, onAPI, http.MethodGet, "/api/v1/status", bearer(k.upload)); res.StatusCode != 200 {
		t.Errorf("upload key on the status: status %d, want 200: %s", res.StatusCode, body)
	}
}

// TestGuardIsolation checks that a key of one project never sees another
// project's files: not through the page cache, not through an ETag, not
// with a cursor.
func TestGuardIsolation(t *testing.T) {
	e, k := newGuardedEnv(t, true, ratelimit.Policy{}, "")
	want := map[string][]cdnapi.File{k.def: e.files, k.other: e.otherFiles}
	etags := map[string]string{}
	// Alternate, so every answer after the first two could come from the
	// page cache.
	for round := range 3 {
		for _, key := range []string{k.def, k.other} {
			res, body := e.do(t, onAPI, "GET", "/api/v1/files?limit=100", bearer(key))
			page := decode[listBody](t, body)
			if res.StatusCode != 200 || len(page.Data) != min(100, len(want[key])) ||
				string(page.Data[0]) != string(appendFile(nil, want[key][0])) {
				t.Fatalf("round %d: a key listed %d files, not its project's", round, len(page.Data))
			}
			if cc, vary := res.Header.Get("Cache-Control"), res.Header.Values("Vary"); cc != "private, max-age=60" ||
				!hasVary(res.Header, "Authorization") {
				t.Errorf("Cache-Control %q, Vary %q", cc, vary)
			}
			etags[key] = res.Header.Get("ETag")
		}
	}
	// A key's own ETag gets a 304; the other project's gets the full page.
	res, _ := e.do(t, onAPI, "GET", "/api/v1/files?limit=100", hdr("Authorization", "Bearer "+k.def, "If-None-Match", etags[k.def]))
	if res.StatusCode != http.StatusNotModified || res.Header.Get("Cache-Control") != "private, max-age=60" {
		t.Errorf("own ETag: %d, Cache-Control %q", res.StatusCode, res.Header.Get("Cache-Control"))
	}
	res, body := e.do(t, onAPI, "GET", "/api/v1/files?limit=100", hdr("Authorization", "Bearer "+k.other, "If-None-Match", etags[k.def]))
	if res.StatusCode != http.StatusOK || len(decode[listBody](t, body).Data) != len(e.otherFiles) {
		t.Errorf("another project's ETag answered %d", res.StatusCode)
	}
	// A cursor minted for one project is refused for the other.
	_, body = e.do(t, onAPI, "GET", "/api/v1/files?limit=5", bearer(k.def))
	cursor := *decode[listBody](t, body).NextCursor
	res, body = e.do(t, onAPI, "GET", "/api/v1/files?limit=5&cursor="+cursor, bearer(k.other))
	if res.StatusCode != http.StatusBadRequest || decode[errorBody](t, body).Error.Code != cdnapi.CodeCursorInvalid {
		t.Errorf("another project's cursor answered %d: %s", res.StatusCode, body)
	}
	if res, _ := e.do(t, onAPI, "GET", "/api/v1/files?limit=5&cursor="+cursor, bearer(k.def)); res.StatusCode != 200 {
		t.Errorf("the key's own cursor answered %d", res.StatusCode)
	}
}

func TestGuardRateLimit(t *testing.T) {
	e, k := newGuardedEnv(t, true, ratelimit.Policy{Rate: 1, Burst: 3}, "")
	for i := range 3 {
		res, body := e.do(t, onAPI, "GET", "/api/v1/files", bearer(k.def))
		if res.StatusCode != 200 {
			t.Fatalf("request %d: %d %s", i, res.StatusCode, body)
		}
		if p, rl := res.Header.Get("RateLimit-Policy"), res.Header.Get("RateLimit"); p != `"default";q=3;w=3` ||
			!strings.HasPrefix(rl, `"default";r=`+string(rune('2'-i))+";t=") {
			t.Errorf("request %d: RateLimit-Policy %q, RateLimit %q", i, p, rl)
		}
	}
	res, body := e.do(t, onEdge, "GET", "/api/v1/regions", bearer(k.def)) // one bucket across routes
	if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") != "1" ||
		res.Header.Get("RateLimit") != `"default";r=0;t=1` {
		t.Fatalf("over the limit: %d, Retry-After %q, RateLimit %q: %s",
			res.StatusCode, res.Header.Get("Retry-After"), res.Header.Get("RateLimit"), body)
	}
	if eb := decode[errorBody](t, body); eb.Error.Code != cdnapi.CodeRateLimited || eb.Error.Type != "rate_limit_error" {
		t.Errorf("error %+v", eb.Error)
	}
	// Another key has a bucket of its own; so do the public routes of an
	// address (issue 19: they were unlimited), whatever its lists used.
	if res, _ := e.do(t, onAPI, "GET", "/api/v1/files", bearer(k.other)); res.StatusCode != 200 {
		t.Errorf("another key answered %d", res.StatusCode)
	}
	for i, path := range []string{"/api/v1/status", "/status", "/api/v1/openapi.json", "/api/v1/status/uptime"} {
		res, err := e.client.Get(e.apiURL + path) // /status is no part of the contract
		must(t, err)
		res.Body.Close()
		if want := map[bool]int{true: 200, false: 429}[i < 3]; res.StatusCode != want || res.Header.Get("RateLimit") == "" {
			t.Fatalf("%s answered %d with RateLimit %q, want %d", path, res.StatusCode, res.Header.Get("RateLimit"), want)
		}
	}
	// Requests without a valid key count against the address, so that
	// guessing keys is limited too; their 401s say how much is left.
	for i := range 3 {
		res, _ := e.do(t, onAPI, "GET", "/api/v1/files", bearer("cdk_guess"))
		if res.StatusCode != 401 || res.Header.Get("RateLimit") == "" {
			t.Fatalf("guess %d: %d, RateLimit %q", i, res.StatusCode, res.Header.Get("RateLimit"))
		}
	}
	if res, _ := e.do(t, onAPI, "GET", "/api/v1/files", nil); res.StatusCode != http.StatusTooManyRequests {
		t.Errorf("the fourth request from the address without a key answered %d", res.StatusCode)
	}
}

// TestGuardForgedForwardedFor checks that X-Forwarded-For from a peer that
// is not a trusted proxy changes nothing: a client cannot get a fresh
// bucket by writing a new address. From a trusted proxy it names the client.
func TestGuardForgedForwardedFor(t *testing.T) {
	policy := ratelimit.Policy{Rate: 1, Burst: 2}
	e, _ := newGuardedEnv(t, false, policy, "") // the loopback peer is not trusted
	for i := range 5 {
		res, _ := e.do(t, onEdge, "GET", "/api/v1/regions", hdr("X-Forwarded-For", "198.51.100."+string(rune('1'+i))))
		if want := i < 2; (res.StatusCode == 200) != want {
			t.Fatalf("request %d with a new forged address: %d", i, res.StatusCode)
		}
	}
	e, _ = newGuardedEnv(t, false, policy, "127.0.0.0/8,::1")
	for i := range 5 {
		xff := "203.0.113." + string(rune('1'+i)) + ", 127.0.0.1"
		if res, _ := e.do(t, onEdge, "GET", "/api/v1/regions", hdr("X-Forwarded-For", xff)); res.StatusCode != 200 {
			t.Fatalf("client %d behind a trusted proxy: %d", i, res.StatusCode)
		}
	}
	for _, line := range e.logLines()[len(e.logLines())-1:] {
		if !strings.Contains(line, `"client_addr":"203.0.113.5"`) {
			t.Errorf("the access log does not show the forwarded client: %s", line)
		}
	}
}

func TestClientResolver(t *testing.T) {
	trusted, err := ParsePrefixes(" 10.0.0.0/8, 192.0.2.7 ,2001:db8::/32")
	must(t, err)
	r := NewClientResolver(trusted)
	for _, tc := range []struct {
		peer string
		xff  []string
		want string
	}{
		{"203.0.113.1:5000", nil, "203.0.113.1"},
		{"203.0.113.1:5000", []string{"1.1.1.1"}, "203.0.113.1"},                   // untrusted peer: header ignored
		{"10.1.2.3:5000", nil, "10.1.2.3"},                                         // trusted peer, no header
		{"10.1.2.3:5000", []string{"1.1.1.1"}, "1.1.1.1"},                          //
		{"10.1.2.3:5000", []string{"6.6.6.6, 1.1.1.1, 10.9.9.9"}, "1.1.1.1"},       // rightmost untrusted
		{"10.1.2.3:5000", []string{"6.6.6.6", "1.1.1.1,192.0.2.7"}, "1.1.1.1"},     // several header lines
		{"10.1.2.3:5000", []string{"10.2.2.2, 10.3.3.3"}, "10.2.2.2"},              // all trusted: the leftmost
		{"10.1.2.3:5000", []string{"6.6.6.6, garbage, 10.3.3.3"}, "10.3.3.3"},      // garbage stops the walk
		{"[2001:db8::1]:443", []string{"2001:0db8::5, 2600::1"}, "2600::1"},        //
		{"[::ffff:10.0.0.1]:443", []string{"::ffff:198.51.100.4"}, "198.51.100.4"}, // mapped addresses unmapped
		{"192.0.2.8:1", []string{"1.1.1.1"}, "192.0.2.8"},                          // a plain address trusts itself alone
		{"not an address", []string{"1.1.1.1"}, "invalid IP"},
	} {
		req := &http.Request{RemoteAddr: tc.peer, Header: http.Header{"X-Forwarded-For": tc.xff}}
		got, forwarded := r.Resolve(req)
		if got.String() != tc.want || forwarded != (got != peerAddr(tc.peer)) {
			t.Errorf("peer %s, X-Forwarded-For %q: %s (forwarded %v), want %s", tc.peer, tc.xff, got, forwarded, tc.want)
		}
	}
	if _, err := ParsePrefixes("10.0.0.0/8,nonsense"); err == nil {
		t.Error("ParsePrefixes accepted nonsense")
	}
	if p, _ := ParsePrefixes("10.1.2.3/8"); p[0] != netip.MustParsePrefix("10.0.0.0/8") {
		t.Errorf("ParsePrefixes does not mask: %v", p)
	}
}
