package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/cdnapi/cdnapi"
)

// listBody is the list envelope, for assertions.
type listBody struct {
	Object     string            `json:"object"`
	Data       []json.RawMessage `json:"data"`
	HasMore    bool              `json:"has_more"`
	NextCursor *string           `json:"next_cursor"`
}

// errorBody is the error body, for assertions.
type errorBody struct {
	Error struct {
		Type      string `json:"type"`
		Code      string `json:"code"`
		Message   string `json:"message"`
		Param     string `json:"param"`
		RequestID string `json:"request_id"`
	} `json:"error"`
}

func decode[T any](t testing.TB, body []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	return v
}

// TestEndpoints sends one request per case through the real mux over
// loopback HTTP and checks the status, the error code and param, and exact
// header values. Every answer is also checked against the OpenAPI document.
func TestEndpoints(t *testing.T) {
	e := newEnv(t, nil)
	long := strings.Repeat("9", 40)
	cases := []struct {
		name    string
		on      string
		method  string
		target  string
		header  http.Header
		status  int
		code    string            // the error code, for errors
		param   string            // the error param, for errors
		message string            // a part of the error message
		headers map[string]string // exact values; "" means absent
	}{
		// The four endpoints and the document, each on its listener.
		{name: "files", on: onAPI, target: "/api/v1/files", status: 200, headers: map[string]string{
			"Cache-Control": "public, max-age=60", "Content-Type": "application/json",
			"X-Content-Type-Options": "nosniff", "Content-Security-Policy": jsonCSP,
			"Access-Control-Allow-Origin": "*", "Access-Control-Expose-Headers": corsExposeHeaders,
			"Link": `</api/v1/files?limit=20&cursor=` + e.cursors.Encode(cdnapi.CursorFiles, DefaultProject,
				cdnapi.Position{CreatedAt: e.files[19].CreatedAt, ID: e.files[19].ID}) + `>; rel="next"`,
		}},
		{name: "files limit", on: onAPI, target: "/api/v1/files?limit=3", status: 200},
		{name: "status", on: onAPI, target: "/api/v1/status", status: 200,
			headers: map[string]string{"Cache-Control": "no-store", "Link": ""}},
		{name: "openapi on api", on: onAPI, target: "/api/v1/openapi.json", status: 200,
			headers: map[string]string{"Cache-Control": cacheOpenAPI}},
		{name: "openapi on edge", on: onEdge, target: "/api/v1/openapi.json", status: 200},
		{name: "regions", on: onEdge, target: "/api/v1/regions", status: 200,
			headers: map[string]string{"Cache-Control": "public, max-age=300", "Link": ""}},
		{name: "assets", on: onEdge, target: "/api/v1/assets", status: 200,
			headers: map[string]string{"Cache-Control": "public, max-age=60"}},
		{name: "assets of a region", on: onEdge, target: "/api/v1/assets?region=FRA1&limit=2", status: 200},

		// limit
		{name: "limit empty", on: onAPI, target: "/api/v1/files?limit=", status: 400, code: "parameter_invalid", param: "limit"},
		{name: "limit bare", on: onAPI, target: "/api/v1/files?limit", status: 400, code: "parameter_invalid", param: "limit"},
		{name: "limit zero", on: onAPI, target: "/api/v1/files?limit=0", status: 400, code: "parameter_invalid", param: "limit"},
		{name: "limit negative", on: onAPI, target: "/api/v1/files?limit=-1", status: 400, code: "parameter_invalid", param: "limit"},
		{name: "limit plus", on: onAPI, target: "/api/v1/files?limit=%2B5", status: 400, code: "parameter_invalid", param: "limit"},
		{name: "limit too large", on: onAPI, target: "/api/v1/files?limit=101", status: 400, code: "parameter_invalid", param: "limit"},
		{name: "limit fraction", on: onAPI, target: "/api/v1/files?limit=1.5", status: 400, code: "parameter_invalid", param: "limit"},
		{name: "limit leading space", on: onAPI, target: "/api/v1/files?limit=+5", status: 400, code: "parameter_invalid", param: "limit"},
		{name: "limit trailing space", on: onAPI, target: "/api/v1/files?limit=5%20", status: 400, code: "parameter_invalid", param: "limit"},
		{name: "limit overflow", on: onAPI, target: "/api/v1/files?limit=" + long, status: 400, code: "parameter_invalid", param: "limit"},
		{name: "limit twice", on: onAPI, target: "/api/v1/files?limit=5&limit=5", status: 400, code: "parameter_invalid", param: "limit"},
		{name: "assets limit invalid", on: onEdge, target: "/api/v1/assets?limit=x", status: 400, code: "parameter_invalid", param: "limit"},

		// unknown and malformed parameters
		{name: "files unknown", on: onAPI, target: "/api/v1/files?page=2", status: 400, code: "parameter_unknown", param: "page",
			message: "limit and cursor"},
		{name: "files unknown region", on: onAPI, target: "/api/v1/files?region=FRA1", status: 400, code: "parameter_unknown", param: "region"},
		{name: "status unknown", on: onAPI, target: "/api/v1/status?verbose=1", status: 400, code: "parameter_unknown", param: "verbose",
			message: "no query parameters"},
		{name: "openapi unknown", on: onAPI, target: "/api/v1/openapi.json?v=2", status: 400, code: "parameter_unknown", param: "v"},
		{name: "regions take no limit", on: onEdge, target: "/api/v1/regions?limit=5", status: 400, code: "parameter_unknown", param: "limit"},
		{name: "assets unknown", on: onEdge, target: "/api/v1/assets?sort=asc", status: 400, code: "parameter_unknown", param: "sort",
			message: "limit, region and cursor"},
		{name: "unknown name not echoed", on: onAPI, target: "/api/v1/files?%3Cscript%3E=1", status: 400, code: "parameter_unknown", param: ""},
		{name: "empty name", on: onAPI, target: "/api/v1/files?=1", status: 400, code: "parameter_unknown", param: ""},
		{name: "bad escape", on: onAPI, target: "/api/v1/files?limit=%zz", status: 400, code: "parameter_invalid", param: ""},
		{name: "semicolon", on: onAPI, target: "/api/v1/files?limit=5;cursor=x", status: 400, code: "parameter_invalid", param: ""},
		{name: "regions malformed", on: onEdge, target: "/api/v1/regions?%", status: 400, code: "parameter_invalid", param: ""},

		// cursor
		{name: "cursor empty", on: onAPI, target: "/api/v1/files?cursor=", status: 400, code: "cursor_invalid", param: "cursor"},
		{name: "cursor garbage", on: onAPI, target: "/api/v1/files?cursor=not-a-cursor", status: 400, code: "cursor_invalid", param: "cursor"},
		{name: "cursor twice", on: onAPI, target: "/api/v1/files?cursor=a&cursor=b", status: 400, code: "parameter_invalid", param: "cursor"},
		{name: "assets cursor empty", on: onEdge, target: "/api/v1/assets?cursor=", status: 400, code: "cursor_invalid", param: "cursor"},

		// region
		{name: "region lower case", on: onEdge, target: "/api/v1/assets?region=fra1", status: 400, code: "parameter_invalid", param: "region"},
		{name: "region empty", on: onEdge, target: "/api/v1/assets?region=", status: 400, code: "parameter_invalid", param: "region"},
		{name: "region too long", on: onEdge, target: "/api/v1/assets?region=FRA12", status: 400, code: "parameter_invalid", param: "region"},
		{name: "region unknown", on: onEdge, target: "/api/v1/assets?region=ZZZ9", status: 400, code: "region_unknown", param: "region"},
		{name: "region twice", on: onEdge, target: "/api/v1/assets?region=FRA1&region=FRA1", status: 400, code: "parameter_invalid", param: "region"},

		// wrong listener and unknown paths
		{name: "regions on api", on: onAPI, target: "/api/v1/regions", status: 404, code: "not_found", message: "regions are served on the edge address"},
		{name: "assets on api", on: onAPI, target: "/api/v1/assets?region=FRA1", status: 404, code: "not_found", message: "assets are served on the edge address"},
		{name: "files on edge", on: onEdge, target: "/api/v1/files", status: 404, code: "not_found", message: "files are served on the API address"},
		{name: "status on edge", on: onEdge, target: "/api/v1/status", status: 404, code: "not_found", message: "served on the API address"},
		{name: "wrong listener any method", on: onAPI, method: http.MethodDelete, target: "/api/v1/regions", status: 404, code: "not_found"},
		{name: "unknown path", on: onAPI, target: "/api/v2/files", status: 404, code: "not_found"},
		{name: "unknown path on edge", on: onEdge, target: "/nothing/here", status: 404, code: "not_found"},
		{name: "trailing slash", on: onAPI, target: "/api/v1/files/", status: 404, code: "not_found"},
		{name: "unclean path", on: onAPI, target: "/api/v1//files", status: 404, code: "not_found",
			headers: map[string]string{"Location": ""}},
		{name: "dot segment", on: onAPI, target: "/api/v1/x/../files", status: 404, code: "not_found"},
		{name: "index on edge", on: onEdge, target: "/", status: 404, code: "not_found"},

		// methods
		{name: "post", on: onAPI, method: http.MethodPost, target: "/api/v1/files", status: 405, code: "method_not_allowed",
			headers: map[string]string{"Allow": "GET, HEAD", "Cache-Control": "no-store"}},
		{name: "delete", on: onEdge, method: http.MethodDelete, target: "/api/v1/regions", status: 405, code: "method_not_allowed",
			headers: map[string]string{"Allow": "GET, HEAD"}},
		{name: "put status", on: onAPI, method: http.MethodPut, target: "/api/v1/status", status: 405, code: "method_not_allowed"},
		{name: "patch assets", on: onEdge, method: http.MethodPatch, target: "/api/v1/assets", status: 405, code: "method_not_allowed"},
		{name: "head", on: onAPI, method: http.MethodHead, target: "/api/v1/files", status: 200},
		{name: "head error", on: onAPI, method: http.MethodHead, target: "/api/v1/files?limit=0", status: 400},
		{name: "options", on: onAPI, method: http.MethodOptions, target: "/api/v1/files", status: 204,
			header: hdr("Origin", "https://app.example", "Access-Control-Request-Method", "GET"),
			headers: map[string]string{
				"Access-Control-Allow-Origin": "*", "Access-Control-Allow-Methods": "GET, HEAD",
				"Access-Control-Allow-Headers": "Authorization, If-None-Match", "Access-Control-Max-Age": corsMaxAge,
			}},
		{name: "options on edge", on: onEdge, method: http.MethodOptions, target: "/api/v1/assets", status: 204},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = http.MethodGet
			}
			res, body := e.do(t, tc.on, method, tc.target, tc.header)
			if res.StatusCode != tc.status {
				t.Fatalf("status %d, want %d; body %s", res.StatusCode, tc.status, body)
			}
			for name, want := range tc.headers {
				if got := strings.Join(res.Header.Values(name), ", "); got != want {
					t.Errorf("%s: %q, want %q", name, got, want)
				}
			}
			if tc.code == "" || method == http.MethodHead {
				return
			}
			eb := decode[errorBody](t, body)
			if eb.Error.Code != tc.code || eb.Error.Param != tc.param {
				t.Errorf("error %s (param %q), want %s (param %q): %s", eb.Error.Code, eb.Error.Param, tc.code, tc.param, eb.Error.Message)
			}
			if !strings.Contains(eb.Error.Message, tc.message) {
				t.Errorf("message %q does not say %q", eb.Error.Message, tc.message)
			}
			if strings.ContainsAny(string(body), "<>") {
				t.Errorf("the body has an unescaped < or >: %s", body)
			}
		})
	}
}

// TestListsShowTheStore checks that each list shows exactly the stored rows,
// in order, with the fields encoded as the store holds them.
func TestListsShowTheStore(t *testing.T) {
	e := newEnv(t, nil)

	_, body := e.get(t, onAPI, "/api/v1/files?limit=7")
	page := decode[listBody](t, body)
	if page.Object != "list" || !page.HasMore || page.NextCursor == nil || len(page.Data) != 7 {
		t.Fatalf("files page: %s", body)
	}
	for i, raw := range page.Data {
		if want := string(appendFile(nil, e.files[i])); string(raw) != want {
			t.Errorf("files[%d] = %s, want %s", i, raw, want)
		}
	}

	_, body = e.get(t, onEdge, "/api/v1/regions")
	page = decode[listBody](t, body)
	if page.HasMore || page.NextCursor != nil || len(page.Data) != len(e.regions) {
		t.Fatalf("regions: %s", body)
	}
	for i, raw := range page.Data {
		if want := string(appendRegion(nil, e.regions[i])); string(raw) != want {
			t.Errorf("regions[%d] = %s, want %s", i, raw, want)
		}
	}

	_, body = e.get(t, onEdge, "/api/v1/assets?region=IAD1&limit=100")
	page = decode[listBody](t, body)
	var want []string
	for _, a := range e.assets {
		if a.Region == "IAD1" {
			want = append(want, string(appendAsset(nil, a)))
		}
	}
	if len(want) == 0 || len(want) > 100 || len(page.Data) != len(want) || page.HasMore {
		t.Fatalf("IAD1 assets: got %d (has_more %v), want %d", len(page.Data), page.HasMore, len(want))
	}
	for i, raw := range page.Data {
		if string(raw) != want[i] {
			t.Errorf("assets[%d] = %s, want %s", i, raw, want[i])
		}
	}

	_, body = e.get(t, onAPI, "/api/v1/status")
	doc := decode[map[string]any](t, body)
	// No upload service nor scanner here: both read under_maintenance,
	// and so does the whole.
	if doc["region"] != "Test Region" || doc["status"] != "under_maintenance" || doc["version"] != "v1" {
		t.Errorf("status: %s", body)
	}
}

// TestHeadMirrorsGet checks that HEAD answers with the headers of GET,
// Content-Length included, and no body, for every endpoint and coding.
func TestHeadMirrorsGet(t *testing.T) {
	e := newEnv(t, nil)
	for _, tc := range []struct{ on, target, accept string }{
		{onAPI, "/api/v1/files", ""},
		{onAPI, "/api/v1/files?limit=100", "gzip"},
		{onAPI, "/api/v1/status", ""},
		{onAPI, "/api/v1/openapi.json", "gzip"},
		{onEdge, "/api/v1/regions", ""},
		{onEdge, "/api/v1/assets?region=FRA1", "gzip"},
		{onEdge, "/api/v1/assets?limit=0", ""},
	} {
		t.Run(tc.target, func(t *testing.T) {
			h := hdr("Accept-Encoding", tc.accept, "X-Request-Id", "same-id")
			get, getBody := e.do(t, tc.on, http.MethodGet, tc.target, h)
			head, headBody := e.do(t, tc.on, http.MethodHead, tc.target, h)
			if len(headBody) != 0 {
				t.Errorf("HEAD has a body of %d bytes", len(headBody))
			}
			if head.StatusCode != get.StatusCode {
				t.Errorf("HEAD status %d, GET %d", head.StatusCode, get.StatusCode)
			}
			get.Header.Del("Date")
			head.Header.Del("Date")
			for name := range mergeKeys(get.Header, head.Header) {
				if g, h := strings.Join(get.Header.Values(name), ", "), strings.Join(head.Header.Values(name), ", "); g != h {
					t.Errorf("%s: GET %q, HEAD %q", name, g, h)
				}
			}
			if cl := get.Header.Get("Content-Length"); cl == "" || cl != head.Header.Get("Content-Length") || cl != itoa(len(getBody)) {
				t.Errorf("Content-Length: GET %q (body %d), HEAD %q", cl, len(getBody), head.Header.Get("Content-Length"))
			}
		})
	}
}
