package httpapi

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/storetest"
)

// TestConditionalRequests checks every form of If-None-Match against the
// ETag of a list, of the status and of the OpenAPI document.
func TestConditionalRequests(t *testing.T) {
	e := newEnv(t, nil)
	for _, target := range []struct{ on, path string }{
		{onAPI, "/api/v1/files?limit=100"},
		{onAPI, "/api/v1/status"},
		{onAPI, "/api/v1/openapi.json"},
		{onEdge, "/api/v1/regions"},
		{onEdge, "/api/v1/assets?region=FRA1"},
	} {
		plain, _ := e.get(t, target.on, target.path)
		coded, _ := e.do(t, target.on, http.MethodGet, target.path, hdr("Accept-Encoding", "gzip"))
		zcoded, _ := e.do(t, target.on, http.MethodGet, target.path, hdr("Accept-Encoding", "zstd"))
		tag, gzTag, zsTag := plain.Header.Get("ETag"), coded.Header.Get("ETag"), zcoded.Header.Get("ETag")
		if !strings.HasPrefix(tag, `"`) || strings.HasPrefix(tag, "W/") {
			t.Fatalf("%s: ETag %q is not strong", target.path, tag)
		}
		big := coded.Header.Get("Content-Encoding") == "gzip"
		if big != (gzTag != tag) || big != (zsTag != tag) || big != (zcoded.Header.Get("Content-Encoding") == "zstd") {
			t.Errorf("%s: gzip %v but ETags %s, %s and %s", target.path, big, tag, gzTag, zsTag)
		}
		// A tag names one coding of the body: once the body is big enough
		// to be coded, a tag of another coding is no match.
		otherCoding := http.StatusNotModified
		if big {
			otherCoding = http.StatusOK
		}
		cases := []struct {
			name, inm, accept string
			want              int
			wantTag           string
		}{
			{"exact", tag, "", 304, tag},
			{"weak", "W/" + tag, "", 304, tag},
			{"in a list", `"nope", ` + tag + `, "other"`, "", 304, tag},
			{"weak in a list", `W/"nope",W/` + tag, "", 304, tag},
			{"star", "*", "", 304, tag},
			{"other tag", `"nope"`, "", 200, tag},
			{"malformed", `nope, "x`, "", 200, tag},
			{"gzip tag with gzip", gzTag, "gzip", 304, gzTag},
			{"star with gzip", "*", "gzip", 304, gzTag},
			{"zstd tag with zstd", zsTag, "zstd", 304, zsTag},
			{"star with zstd", "*", "zstd", 304, zsTag},
			{"all tags with zstd", tag + ", " + gzTag + ", " + zsTag, "gzip, zstd", 304, zsTag},
			// A client that holds another coding of the body gets the
			// answer in the coding it asks for now, never a 304 that
			// points at a stored answer it may no longer accept.
			{"gzip tag without gzip", gzTag, "", otherCoding, tag},
			{"plain tag with gzip", tag, "gzip", otherCoding, gzTag},
			{"gzip tag with zstd", gzTag, "zstd", otherCoding, zsTag},
			{"zstd tag with gzip", zsTag, "gzip", otherCoding, gzTag},
		}
		for _, tc := range cases {
			t.Run(target.path+"/"+tc.name, func(t *testing.T) {
				res, body := e.do(t, target.on, http.MethodGet, target.path,
					hdr("If-None-Match", tc.inm, "Accept-Encoding", tc.accept))
				if res.StatusCode != tc.want {
					t.Fatalf("status %d, want %d", res.StatusCode, tc.want)
				}
				if tc.want != 304 {
					if got := res.Header.Get("ETag"); got != tc.wantTag {
						t.Errorf("ETag %s, want %s", got, tc.wantTag)
					}
					return
				}
				if len(body) != 0 {
					t.Errorf("304 has a body of %d bytes", len(body))
				}
				if got := res.Header.Get("ETag"); got != tc.wantTag {
					t.Errorf("ETag %s, want %s", got, tc.wantTag)
				}
				for _, name := range []string{"Cache-Control", "Vary"} {
					if got, want := strings.Join(res.Header.Values(name), ", "), strings.Join(plain.Header.Values(name), ", "); got != want {
						t.Errorf("%s %q, the 200 has %q", name, got, want)
					}
				}
			})
		}
	}
}

// TestETagFollowsTheBody checks that a change of the data changes the ETag
// of the page that shows it.
func TestETagFollowsTheBody(t *testing.T) {
	e := newEnv(t, nil)
	before, _ := e.get(t, onAPI, "/api/v1/files?limit=5")
	again, _ := e.get(t, onAPI, "/api/v1/files?limit=5")
	if before.Header.Get("ETag") != again.Header.Get("ETag") {
		t.Fatalf("the same page got two ETags")
	}
	newest := e.files[0]
	newest.ID = "fil_zzzzNewest"
	newest.CreatedAt = newest.CreatedAt.Add(1e9)
	must(t, storetest.Writer(e.store).PutFiles(context.Background(), []cdnapi.File{newest}))
	after, _ := e.do(t, onAPI, http.MethodGet, "/api/v1/files?limit=5", hdr("If-None-Match", before.Header.Get("ETag")))
	if after.StatusCode != http.StatusOK || after.Header.Get("ETag") == before.Header.Get("ETag") {
		t.Errorf("after an insert: status %d, ETag %s (was %s)", after.StatusCode, after.Header.Get("ETag"), before.Header.Get("ETag"))
	}
}

// TestContentCodings checks when answers are gzip- or zstd-coded, that the
// coding holds the same bytes as the identity answer, and its ETag.
func TestContentCodings(t *testing.T) {
	e := newEnv(t, nil)
	identity, plainBody := e.get(t, onAPI, "/api/v1/files?limit=100")
	if len(plainBody) <= gzipMinSize {
		t.Fatalf("the page is only %d bytes; the test needs one above %d", len(plainBody), gzipMinSize)
	}
	for _, tc := range []struct {
		name, target, accept string
		coding               string // the Content-Encoding wanted; "" for none
	}{
		{"accepted", "/api/v1/files?limit=100", "gzip", "gzip"},
		{"among others", "/api/v1/files?limit=100", "br;q=1.0, gzip;q=0.8, deflate", "gzip"},
		{"upper case", "/api/v1/files?limit=100", "GZIP", "gzip"},
		{"star", "/api/v1/files?limit=100", "*", "gzip"},
		{"refused", "/api/v1/files?limit=100", "gzip;q=0", ""},
		{"refused with star", "/api/v1/files?limit=100", "gzip;q=0.000, *", ""},
		{"not offered", "/api/v1/files?limit=100", "br", ""},
		{"none", "/api/v1/files?limit=100", "", ""},
		{"small body", "/api/v1/files?limit=1", "gzip", ""},
		{"zstd", "/api/v1/files?limit=100", "zstd", "zstd"},
		{"a browser's", "/api/v1/files?limit=100", "gzip, deflate, br, zstd", "zstd"},
		{"gzip preferred", "/api/v1/files?limit=100", "zstd;q=0.5, gzip", "gzip"},
		{"zstd refused", "/api/v1/files?limit=100", "zstd;q=0, gzip", "gzip"},
		{"small body, zstd", "/api/v1/files?limit=1", "zstd", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, body := e.do(t, onAPI, http.MethodGet, tc.target, hdr("Accept-Encoding", tc.accept))
			if got := res.Header.Get("Content-Encoding"); got != tc.coding {
				t.Fatalf("Content-Encoding %q, want %q", got, tc.coding)
			}
			if !hasVary(res.Header, "Accept-Encoding") {
				t.Errorf("Vary %q does not name Accept-Encoding", res.Header.Values("Vary"))
			}
			if tc.coding == "" {
				return
			}
			decoded := decodeCoding(t, tc.coding, body)
			if !bytes.Equal(decoded, plainBody) {
				t.Errorf("the %s body does not hold the identity body", tc.coding)
			}
			if want := strings.TrimSuffix(identity.Header.Get("ETag"), `"`) + "-" + tc.coding + `"`; res.Header.Get("ETag") != want {
				t.Errorf("ETag %s, want %s", res.Header.Get("ETag"), want)
			}
		})
	}
}

// decodeCoding undoes the content coding of body.
func decodeCoding(t *testing.T, coding string, body []byte) []byte {
	t.Helper()
	switch coding {
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(body))
		must(t, err)
		out, err := io.ReadAll(zr)
		must(t, err)
		return out
	case "zstd":
		zr, err := zstd.NewReader(nil)
		must(t, err)
		defer zr.Close()
		out, err := zr.DecodeAll(body, nil)
		must(t, err)
		return out
	}
	t.Fatalf("no decoder for %q", coding)
	return nil
}

func hasVary(h http.Header, name string) bool {
	for _, v := range h.Values("Vary") {
		for part := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(part), name) {
				return true
			}
		}
	}
	return false
}

// TestCORSOrigins checks the answers when allowed origins are configured.
func TestCORSOrigins(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.CORSOrigins = []string{"https://app.example", "https://admin.example"} })
	for _, tc := range []struct {
		name, method, origin, want string
	}{
		{"allowed", http.MethodGet, "https://app.example", "https://app.example"},
		{"second allowed", http.MethodGet, "https://admin.example", "https://admin.example"},
		{"other origin", http.MethodGet, "https://evil.example", ""},
		{"no origin", http.MethodGet, "", ""},
		{"preflight allowed", http.MethodOptions, "https://app.example", "https://app.example"},
		{"preflight other", http.MethodOptions, "https://evil.example", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, _ := e.do(t, onAPI, tc.method, "/api/v1/files", hdr("Origin", tc.origin))
			if got := res.Header.Get("Access-Control-Allow-Origin"); got != tc.want {
				t.Errorf("Access-Control-Allow-Origin %q, want %q", got, tc.want)
			}
			if !hasVary(res.Header, "Origin") {
				t.Errorf("Vary %q does not name Origin", res.Header.Values("Vary"))
			}
			exposed := res.Header.Get("Access-Control-Expose-Headers")
			if want := tc.want != "" && tc.method == http.MethodGet; (exposed != "") != want {
				t.Errorf("Access-Control-Expose-Headers %q; want it %v", exposed, want)
			}
		})
	}
}

// TestRequestID checks that a sane X-Request-Id is kept and any other is
// replaced, in the header, in error bodies and in the access log.
func TestRequestID(t *testing.T) {
	e := newEnv(t, nil)
	for _, tc := range []struct {
		name, in string
		kept     bool
	}{
		{"sane", "abc-123.X_y", true},
		{"longest", strings.Repeat("a", 64), true},
		{"too long", strings.Repeat("a", 65), false},
		{"space", "abc 123", false},
		{"quote", `abc"123`, false},
		{"non-ASCII", "abcé", false},
		{"none", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, body := e.do(t, onAPI, http.MethodGet, "/api/v1/files?limit=0", hdr("X-Request-Id", tc.in))
			id := res.Header.Get("X-Request-Id")
			if tc.kept && id != tc.in {
				t.Errorf("X-Request-Id %q, want the incoming %q", id, tc.in)
			}
			if !tc.kept && (!strings.HasPrefix(id, "req_") || len(id) != 24 || !saneRequestID(id)) {
				t.Errorf("X-Request-Id %q, want a generated req_ and 20 characters", id)
			}
			if eb := decode[errorBody](t, body); eb.Error.RequestID != id {
				t.Errorf("request_id %q, header %q", eb.Error.RequestID, id)
			}
			if !strings.Contains(e.logs.String(), `"request_id":"`+id+`"`) {
				t.Errorf("the access log does not name %q", id)
			}
		})
	}
	a, _ := e.get(t, onAPI, "/api/v1/status")
	b, _ := e.get(t, onAPI, "/api/v1/status")
	if a.Header.Get("X-Request-Id") == b.Header.Get("X-Request-Id") {
		t.Errorf("two requests got the same generated ID")
	}
	// Generated IDs use every base62 character, about equally often, and do
	// not repeat: 40,000 characters put about 645 on each.
	seen, counts := map[string]bool{}, map[rune]int{}
	for range 2000 {
		id := newRequestID()
		if seen[id] || !saneRequestID(id) {
			t.Fatalf("generated %q twice or malformed", id)
		}
		seen[id] = true
		for _, c := range id[4:] {
			counts[c]++
		}
	}
	for _, c := range base62 {
		if counts[c] < 450 || counts[c] > 850 {
			t.Errorf("%q appears %d times in 40,000 generated characters, want about 645", c, counts[c])
		}
	}
}

// TestStorageUnavailable closes the store under the handlers: the lists
// answer 503 storage_unavailable with Retry-After and no internals, and the
// status still answers 200 from memory.
func TestStorageUnavailable(t *testing.T) {
	e := newEnv(t, nil)
	must(t, e.store.Close())
	for _, tc := range []struct{ on, target string }{
		{onAPI, "/api/v1/files"},
		{onEdge, "/api/v1/regions"},
		{onEdge, "/api/v1/assets"},
		{onEdge, "/api/v1/assets?region=FRA1"},
	} {
		res, body := e.get(t, tc.on, tc.target)
		if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" {
			t.Fatalf("%s: status %d, Retry-After %q", tc.target, res.StatusCode, res.Header.Get("Retry-After"))
		}
		if eb := decode[errorBody](t, body); eb.Error.Code != cdnapi.CodeStorageUnavailable || strings.Contains(eb.Error.Message, "sql") {
			t.Errorf("%s: %s", tc.target, body)
		}
	}
	if !strings.Contains(e.logs.String(), `"msg":"store failed"`) {
		t.Errorf("the store failure was not logged")
	}
	if res, _ := e.get(t, onAPI, "/api/v1/status"); res.StatusCode != http.StatusOK {
		t.Errorf("status answered %d with the store closed", res.StatusCode)
	}
	// A parameter error needs no store, and is still reported as such.
	if res, _ := e.get(t, onAPI, "/api/v1/files?limit=0"); res.StatusCode != http.StatusBadRequest {
		t.Errorf("a bad limit answered %d with the store closed", res.StatusCode)
	}
}

// TestGuard exercises the slot for authentication and rate limiting: a
// guard that refuses with each error the real guard gives, one that panics,
// one that fails with an error that is not a *cdnapi.Error, and one that
// sets the project. It also checks that preflights and 405s bypass it.
func TestGuard(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		c.Guard = func(route string, next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch r.Header.Get("X-Test-Guard") {
				case "unauthenticated":
					writeError(w, r, cdnapi.Errorf(cdnapi.CodeAuthenticationRequired, "", "send an API key"))
				case "bad key":
					writeError(w, r, cdnapi.Errorf(cdnapi.CodeAPIKeyInvalid, "", "the API key is not valid"))
				case "limited":
					w.Header().Set("Retry-After", "7")
					w.Header().Set("RateLimit", `"default";r=0;t=7`)
					w.Header().Set("RateLimit-Policy", `"default";q=100;w=60`)
					writeError(w, r, cdnapi.Errorf(cdnapi.CodeRateLimited, "", "slow down"))
				case "panic":
					panic("guard exploded: secret detail")
				case "error":
					writeError(w, r, errors.New("guard failed: secret detail"))
				case "project":
					next.ServeHTTP(w, r.WithContext(withProject(r.Context(), otherProject)))
				default:
					next.ServeHTTP(w, r)
				}
			})
		}
	})
	for _, tc := range []struct {
		name, guard, method string
		status              int
		code                string
		headers             map[string]string
	}{
		{"authentication required", "unauthenticated", "GET", 401, cdnapi.CodeAuthenticationRequired,
			map[string]string{"WWW-Authenticate": `Bearer realm="cdnapi"`}},
		{"key invalid", "bad key", "GET", 401, cdnapi.CodeAPIKeyInvalid, nil},
		{"rate limited", "limited", "GET", 429, cdnapi.CodeRateLimited, map[string]string{"Retry-After": "7"}},
		{"panic", "panic", "GET", 500, cdnapi.CodeInternal, map[string]string{"Cache-Control": "no-store"}},
		{"panic on HEAD", "panic", "HEAD", 500, "", nil},
		{"plain error", "error", "GET", 500, cdnapi.CodeInternal, nil},
		{"preflight bypasses", "panic", "OPTIONS", 204, "", nil},
		{"405 bypasses", "panic", "POST", 405, cdnapi.CodeMethodNotAllowed, nil},
		{"project", "project", "GET", 200, "",
			map[string]string{"Cache-Control": "private, max-age=60", "Vary": "Accept-Encoding, Authorization"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, body := e.do(t, onAPI, tc.method, "/api/v1/files?limit=100", hdr("X-Test-Guard", tc.guard))
			if res.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tc.status, body)
			}
			for name, want := range tc.headers {
				if got := strings.Join(res.Header.Values(name), ", "); got != want {
					t.Errorf("%s %q, want %q", name, got, want)
				}
			}
			if strings.Contains(string(body), "secret") {
				t.Errorf("the body leaks internals: %s", body)
			}
			if tc.code != "" {
				if eb := decode[errorBody](t, body); eb.Error.Code != tc.code {
					t.Errorf("code %s, want %s", eb.Error.Code, tc.code)
				}
			}
			if tc.guard == "project" {
				page := decode[listBody](t, body)
				if len(page.Data) != len(e.otherFiles) || string(page.Data[0]) != string(appendFile(nil, e.otherFiles[0])) {
					t.Errorf("listed %d files, not the %d of the key's project", len(page.Data), len(e.otherFiles))
				}
			}
		})
	}
	if !strings.Contains(e.logs.String(), "guard exploded") || !strings.Contains(e.logs.String(), "guard failed") {
		t.Errorf("the panic and the internal error were not logged")
	}
	// A cursor of the default project is refused for another project.
	_, body := e.get(t, onAPI, "/api/v1/files?limit=1")
	next := *decode[listBody](t, body).NextCursor
	res, _ := e.do(t, onAPI, "GET", "/api/v1/files?cursor="+next, hdr("X-Test-Guard", "project"))
	if res.StatusCode != http.StatusBadRequest {
		t.Errorf("a cursor of another project answered %d", res.StatusCode)
	}
}

// TestAccessLogAndMetrics checks the one log line per request, with the
// fields of an operator's queries: the route pattern beside the path and
// query (cursor shortened), the duration in seconds, the client and the key
// id that a guard sets, and the request counter.
func TestAccessLogAndMetrics(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		c.Guard = func(route string, next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("X-Test-Key") != "" {
					setKeyID(r.Context(), r.Header.Get("X-Test-Key"))
					setClientAddr(r.Context(), "203.0.113.9")
				}
				next.ServeHTTP(w, r)
			})
		}
	})
	_, body := e.get(t, onAPI, "/api/v1/files?limit=1")
	cursor := *decode[listBody](t, body).NextCursor
	before := len(e.logLines())
	e.do(t, onAPI, http.MethodGet, "/api/v1/files?limit=2", hdr("X-Request-Id", "log-test-1", "User-Agent", "probe/1.0"))
	e.do(t, onEdge, http.MethodGet, "/some/unknown/path", hdr("X-Request-Id", "log-test-2"))
	e.do(t, onAPI, http.MethodGet, "/api/v1/files?cursor="+cursor+"&limit=1",
		hdr("X-Request-Id", "log-test-3", "X-Test-Key", "key_7"))
	lines := e.logLines()[before:]
	if len(lines) != 3 {
		t.Fatalf("%d access-log lines for 3 requests: %q", len(lines), lines)
	}
	for i, want := range []map[string]any{
		{"request_id": "log-test-1", "listener": "api", "method": "GET", "route": "/api/v1/files", "status": 200.0,
			"path": "/api/v1/files?limit=2", "user_agent": "probe/1.0", "client_addr": "127.0.0.1", "key_id": nil},
		{"request_id": "log-test-2", "listener": "edge", "method": "GET", "route": "/", "status": 404.0,
			"path": "/some/unknown/path", "client_addr": "127.0.0.1"},
		{"request_id": "log-test-3", "route": "/api/v1/files", "status": 200.0,
			"path":        "/api/v1/files?cursor=" + cursor[:loggedCursor] + "…&limit=1",
			"client_addr": "203.0.113.9", "key_id": "key_7"},
	} {
		var got map[string]any
		must(t, json.Unmarshal([]byte(lines[i]), &got))
		for k, v := range want {
			if got[k] != v {
				t.Errorf("line %d: %s = %v, want %v", i, k, got[k], v)
			}
		}
		if b, _ := got["bytes"].(float64); b <= 0 {
			t.Errorf("line %d: bytes %v", i, got["bytes"])
		}
		if d, ok := got["duration_seconds"].(float64); !ok || d <= 0 || d > 10 {
			t.Errorf("line %d: duration_seconds %v, want seconds as a number", i, got["duration_seconds"])
		}
	}
	if strings.Contains(strings.Join(lines, ""), cursor) {
		t.Error("a whole cursor went into the log")
	}
	files := e.requestCount(t, "api", "/api/v1/files", "200")
	unmatched := e.requestCount(t, "edge", "/", "404")
	if files != 3 || unmatched != 1 {
		t.Errorf("requests_total: files %v, unmatched %v; want 3 and 1", files, unmatched)
	}
}

// TestLogTarget checks how the access log shows a path and its query.
func TestLogTarget(t *testing.T) {
	long := strings.Repeat("a", 40)
	for _, tc := range []struct{ path, query, want string }{
		{"/api/v1/files", "", "/api/v1/files"},
		{"/api/v1/files", "limit=5", "/api/v1/files?limit=5"},
		{"/x", "cursor=" + long + "&limit=5", "/x?cursor=" + long[:loggedCursor] + "…&limit=5"},
		{"/x", "cursor=short", "/x?cursor=short"},
		{"/x", "limit=1&cursor=" + long, "/x?limit=1&cursor=" + long[:loggedCursor] + "…"},
		{"/x", strings.Repeat("q", 600), "/x?" + strings.Repeat("q", maxLoggedTarget-3) + "…"},
		// No credential reaches the log: unknown parameters lose their
		// values, and anything holding a key is replaced whole.
		{"/x", "limit=2&access_token=secret", "/x?limit=2&access_token=xxxxx"},
		{"/x", "region=FRA1&key=cdk_abc&api_key=abc", "/x?region=FRA1&key=xxxxx&api_key=xxxxx"},
		{"/x", "cursor=cdk_" + long, "/x?cursor=xxxxx"},
		{"/x", "limit=cdk%5Fabc&cdk_abc&CDK_abc=1", "/x?limit=xxxxx&xxxxx&xxxxx"},
		{"/x", "a%20b=1&flag", "/x?xxxxx&flag"},
		{"/api/v1/files/cdk_abc/x", "", "/api/v1/files/xxxxx/x"},
	} {
		if got := logTarget(tc.path, tc.query); got != tc.want {
			t.Errorf("logTarget(%q, %q) = %q, want %q", tc.path, tc.query, got, tc.want)
		}
	}
}

// requestCount returns the value of cdnapi_http_requests_total with the
// given labels, as the registry reports it.
func (e *env) requestCount(t *testing.T, listener, route, code string) float64 {
	t.Helper()
	families, err := e.reg.Gather()
	must(t, err)
	for _, f := range families {
		if f.GetName() != "cdnapi_http_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["listener"] == listener && labels["route"] == route && labels["code"] == code {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// TestStoreDeadline gives the store work a deadline that has passed before
// the store is asked: the lists answer 503 storage_unavailable at once
// instead of waiting, and the status, served from memory, answers 200.
func TestStoreDeadline(t *testing.T) {
	// One nanosecond has elapsed by the time context.WithTimeout compares
	// the deadline with the clock, so the context starts out expired and
	// database/sql refuses the query before it reaches SQLite.
	e := newEnv(t, func(c *Config) { c.StoreTimeout = time.Nanosecond })
	for _, tc := range []struct{ on, target string }{
		{onAPI, "/api/v1/files"},
		{onEdge, "/api/v1/assets?region=FRA1"},
		{onEdge, "/api/v1/regions"},
	} {
		res, body := e.get(t, tc.on, tc.target)
		if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") != retryAfterSeconds {
			t.Errorf("%s: status %d, Retry-After %q: %s", tc.target, res.StatusCode, res.Header.Get("Retry-After"), body)
		}
	}
	if res, _ := e.get(t, onAPI, "/api/v1/status"); res.StatusCode != http.StatusOK {
		t.Errorf("status answered %d", res.StatusCode)
	}
	if !strings.Contains(e.logs.String(), "deadline exceeded") {
		t.Errorf("the deadline was not logged")
	}
}
