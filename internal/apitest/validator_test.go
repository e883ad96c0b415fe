package apitest

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cdnapi/cdnapi/api"
)

// failures is a testing.TB that records failures instead of failing, so
// that the tests can assert that Check fails. Calling any method it does not
// override panics on the nil TB, which would show that Check relies on more
// than Helper and Errorf.
type failures struct {
	testing.TB
	messages []string
}

func (f *failures) Helper() {}

func (f *failures) Errorf(format string, args ...any) {
	f.messages = append(f.messages, strings.TrimSpace(fmt.Sprintf(format, args...)))
}

const (
	digest   = "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	csp      = "default-src 'none'; frame-ancestors 'none'"
	cursor   = "AQEHZGVmYXVsdA"
	jsonType = "application/json"
)

// obj is a JSON object under construction.
type obj = map[string]any

func file(id, createdAt string) obj {
	return obj{"id": id, "created_at": createdAt, "filename": "report-q3.pdf", "bytes": 482113, "checksum": digest}
}

func asset(id, createdAt, region string) obj {
	return obj{"id": id, "created_at": createdAt, "path": "/static/js/app.3f9a1c.js", "bytes": 91822,
		"cache_status": "HIT", "region": region}
}

func region(code string) obj {
	return obj{"code": code, "name": "Frankfurt", "zone": "eu-central", "country": "DE", "status": "operational"}
}

func page(next any, items ...obj) obj {
	data := make([]any, len(items))
	for i, it := range items {
		data[i] = it
	}
	return obj{"object": "list", "data": data, "has_more": next != nil, "next_cursor": next}
}

func filesPage() obj {
	return page(cursor, file("fil_B2", "2026-11-20T14:03:07Z"), file("fil_A1", "2026-11-20T14:03:07Z"))
}

func statusDoc() obj {
	var components []any
	for _, name := range []string{"API", "Upload Service", "Storage", "Virus Scanning"} {
		components = append(components, obj{"name": name, "status": "operational"})
	}
	return obj{"status": "operational", "version": "v1", "region": "FRA1", "components": components,
		"updated_at": "2026-11-20T14:03:07Z"}
}

func errorBody(typ, code string) obj {
	return obj{"error": obj{"type": typ, "code": code, "message": "limit must be an integer from 1 to 100",
		"param": "limit", "request_id": "req_7fQ2"}}
}

// okHeaders are the headers of a 200 that caches as cacheControl.
func okHeaders(cacheControl string) http.Header {
	return http.Header{
		"Content-Type":            {jsonType},
		"Cache-Control":           {cacheControl},
		"Etag":                    {`"e3b0c44298fc1c14"`},
		"X-Request-Id":            {"req_7fQ2"},
		"X-Content-Type-Options":  {"nosniff"},
		"Content-Security-Policy": {csp},
	}
}

func errorHeaders() http.Header {
	return http.Header{
		"Content-Type":            {jsonType},
		"Cache-Control":           {"no-store"},
		"X-Request-Id":            {"req_7fQ2"},
		"X-Content-Type-Options":  {"nosniff"},
		"Content-Security-Policy": {csp},
	}
}

// with returns h with the given name set to values, or deleted when values
// is empty.
func with(h http.Header, name string, values ...string) http.Header {
	h = h.Clone()
	if len(values) == 0 {
		h.Del(name)
	} else {
		h[http.CanonicalHeaderKey(name)] = values
	}
	return h
}

// edit applies change to a deep copy of o.
func edit(o obj, change func(obj)) obj {
	b, _ := json.Marshal(o)
	var c obj
	_ = json.Unmarshal(b, &c)
	change(c)
	return c
}

func item(o obj, i int) obj { return o["data"].([]any)[i].(obj) }

func gzipped(t *testing.T, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := json.NewEncoder(zw).Encode(v); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestCheck(t *testing.T) {
	const (
		files   = "http://127.0.0.1:41234/api/v1/files"
		assets  = "http://127.0.0.1:41235/api/v1/assets"
		regions = "http://127.0.0.1:41235/api/v1/regions"
		status  = "http://127.0.0.1:41234/api/v1/status"
	)
	filesLink := `</api/v1/files?cursor=` + cursor + `>; rel="next"`
	filesOK := with(okHeaders("public, max-age=60"), "Link", filesLink)
	lastPage := page(nil, file("fil_A1", "2026-11-20T14:03:07Z"))

	tests := []struct {
		name      string
		method    string // GET when empty
		url       string
		reqHeader http.Header
		status    int
		header    http.Header
		body      any // an obj, a []byte sent as is, or nil for no body
		want      string
	}{
		// Answers the contract allows.
		{name: "files page", url: files, status: 200, header: filesOK, body: filesPage()},
		{name: "files last page", url: files + "?limit=1", status: 200,
			header: okHeaders("public, max-age=60"), body: lastPage},
		{name: "files private when auth is on", url: files + "?limit=1", status: 200,
			header: with(okHeaders("private, max-age=60"), "Vary", "Authorization"), body: lastPage},
		{name: "files link spells out the default limit", url: files, status: 200,
			header: with(filesOK, "Link", `</api/v1/files?limit=20&cursor=`+cursor+`>; rel="next"`), body: filesPage()},
		{name: "files next page keeps limit", url: files + "?limit=2&cursor=" + cursor, status: 200,
			header: with(filesOK, "Link", `</api/v1/files?limit=2&cursor=`+cursor+`>; rel="next"`), body: filesPage()},
		{name: "files limit with a leading zero, spelled plainly in the Link", url: files + "?limit=02", status: 200,
			header: with(filesOK, "Link", `</api/v1/files?limit=2&cursor=`+cursor+`>; rel="next"`), body: filesPage()},
		{name: "files HEAD", method: "HEAD", url: files, status: 200, header: filesOK},
		{name: "files 304", url: files, reqHeader: http.Header{"If-None-Match": {`W/"x,y", W/"e3b0c44298fc1c14"`}},
			status: 304, header: with(with(okHeaders("public, max-age=60"), "Content-Type"), "Content-Security-Policy")},
		{name: "files 304 to star", url: files, reqHeader: http.Header{"If-None-Match": {"*"}},
			status: 304, header: with(okHeaders("public, max-age=60"), "Content-Type")},
		{name: "files gzip", url: files, reqHeader: http.Header{"Accept-Encoding": {"br;q=1, gzip;q=0.5"}}, status: 200,
			header: with(with(filesOK, "Content-Encoding", "gzip"), "Vary", "Accept-Encoding"), body: gzipped(t, filesPage())},
		{name: "kept request id", url: files, reqHeader: http.Header{"X-Request-Id": {"lb-7.a_B"}}, status: 200,
			header: with(filesOK, "X-Request-Id", "lb-7.a_B"), body: filesPage()},
		{name: "insane request id replaced", url: files, reqHeader: http.Header{"X-Request-Id": {"a b"}}, status: 200,
			header: filesOK, body: filesPage()},
		{name: "rate limit headers", url: files, status: 200, body: filesPage(),
			header: with(with(filesOK, "RateLimit", `"default";r=99;t=1`), "RateLimit-Policy", `"default";q=100;w=2`)},
		{name: "regions", url: regions, status: 200, header: okHeaders("public, max-age=300"),
			body: page(nil, region("AMS1"), region("FRA1"), region("FRA2"))},
		{name: "assets of a region", url: assets + "?region=FRA1&limit=2", status: 200,
			header: with(okHeaders("public, max-age=60"), "Link", `</api/v1/assets?region=FRA1&limit=2&cursor=`+cursor+`>; rel="next"`),
			body:   page(cursor, asset("ast_2", "2026-11-20T14:03:08Z", "FRA1"), asset("ast_9", "2026-11-20T14:03:07Z", "FRA1"))},
		{name: "status", url: status, status: 200, header: okHeaders("no-store"), body: statusDoc()},
		{name: "status in an outage", url: status, status: 200, header: okHeaders("no-store"),
			body: edit(statusDoc(), func(o obj) {
				o["status"] = "major_outage"
				o["components"].([]any)[2].(obj)["status"] = "major_outage"
			})},
		{name: "document", url: "http://127.0.0.1:41235/api/v1/openapi.json", status: 200,
			header: okHeaders("public, max-age=300"), body: api.JSON()},
		{name: "400", url: files + "?limit=0", status: 400, header: errorHeaders(),
			body: errorBody("invalid_request_error", "parameter_invalid")},
		{name: "400 on regions", url: regions + "?limit=5", status: 400, header: errorHeaders(),
			body: errorBody("invalid_request_error", "parameter_unknown")},
		{name: "401", url: files, status: 401, header: with(errorHeaders(), "WWW-Authenticate", "Bearer"),
			body: errorBody("authentication_error", "authentication_required")},
		{name: "404 on the wrong address", url: "http://127.0.0.1:41234/api/v1/regions", status: 404,
			header: errorHeaders(), body: errorBody("invalid_request_error", "not_found")},
		{name: "404 outside the document", method: "DELETE", url: "http://localhost:8080/api/v2/nope", status: 404,
			header: errorHeaders(), body: errorBody("invalid_request_error", "not_found")},
		{name: "404 HEAD outside the document", method: "HEAD", url: "http://localhost:8080/nope", status: 404,
			header: errorHeaders()},
		{name: "405", method: "POST", url: files, status: 405, header: with(errorHeaders(), "Allow", "GET, HEAD"),
			body: errorBody("invalid_request_error", "method_not_allowed")},
		{name: "429", url: assets, status: 429, header: with(errorHeaders(), "Retry-After", "3"),
			body: errorBody("rate_limit_error", "rate_limited")},
		{name: "500", url: status, status: 500, header: errorHeaders(), body: errorBody("api_error", "internal_error")},
		{name: "503", url: files, status: 503, header: with(errorHeaders(), "Retry-After", "1"),
			body: errorBody("api_error", "storage_unavailable")},
		{name: "preflight", method: "OPTIONS", url: files, status: 204, header: http.Header{
			"Access-Control-Allow-Origin": {"*"}, "Access-Control-Allow-Methods": {"GET, HEAD"},
			"Access-Control-Allow-Headers": {"Authorization, If-None-Match"}, "Access-Control-Max-Age": {"600"},
			"X-Request-Id": {"req_7fQ2"}, "X-Content-Type-Options": {"nosniff"}}},

		// Items that break their schema.
		{name: "bad checksum", url: files, status: 200, header: filesOK,
			body: edit(filesPage(), func(o obj) { item(o, 0)["checksum"] = "sha256:ABC" }), want: "checksum"},
		{name: "extra field", url: files, status: 200, header: filesOK,
			body: edit(filesPage(), func(o obj) { item(o, 0)["project"] = "default" }), want: "project"},
		{name: "negative bytes", url: files, status: 200, header: filesOK,
			body: edit(filesPage(), func(o obj) { item(o, 1)["bytes"] = -1 }), want: "bytes"},
		{name: "fractional seconds", url: files, status: 200, header: filesOK,
			body: edit(filesPage(), func(o obj) { item(o, 0)["created_at"] = "2026-11-20T14:03:07.5Z" }), want: "created_at"},
		{name: "bad file id", url: files, status: 200, header: filesOK,
			body: edit(filesPage(), func(o obj) { item(o, 0)["id"] = "file_B2" }), want: "id"},
		{name: "unknown cache status", url: assets, status: 200, header: okHeaders("public, max-age=60"),
			body: page(nil, edit(asset("ast_1", "2026-11-20T14:03:07Z", "FRA1"), func(o obj) { o["cache_status"] = "hit" })),
			want: "cache_status"},
		{name: "bad zone", url: regions, status: 200, header: okHeaders("public, max-age=300"),
			body: page(nil, edit(region("FRA1"), func(o obj) { o["zone"] = "eu_central" })), want: "zone"},

		// Envelopes that break their schema.
		{name: "missing has_more", url: files, status: 200, header: filesOK,
			body: edit(filesPage(), func(o obj) { delete(o, "has_more") }), want: "has_more"},
		{name: "has_more without a cursor", url: files, status: 200, header: filesOK,
			body: edit(filesPage(), func(o obj) { o["next_cursor"] = nil }), want: "has_more is true, but next_cursor is null"},
		{name: "cursor without has_more", url: files, status: 200, header: okHeaders("public, max-age=60"),
			body: edit(lastPage, func(o obj) { o["next_cursor"] = cursor }), want: "has_more is false, but next_cursor is"},
		{name: "padded cursor", url: files, status: 200, header: with(filesOK, "Link", `</api/v1/files?cursor=AQ==>; rel="next"`),
			body: edit(filesPage(), func(o obj) { o["next_cursor"] = "AQ==" }), want: "does not match FileList"},
		{name: "object is not list", url: regions, status: 200, header: okHeaders("public, max-age=300"),
			body: edit(page(nil), func(o obj) { o["object"] = "region" }), want: "object"},
		{name: "status version", url: status, status: 200, header: okHeaders("no-store"),
			body: edit(statusDoc(), func(o obj) { o["version"] = "v2" }), want: "version"},
		{name: "status components out of order", url: status, status: 200, header: okHeaders("no-store"),
			body: edit(statusDoc(), func(o obj) {
				c := o["components"].([]any)
				c[0], c[1] = c[1], c[0]
			}), want: "components"},
		{name: "status component missing", url: status, status: 200, header: okHeaders("no-store"),
			body: edit(statusDoc(), func(o obj) { o["components"] = o["components"].([]any)[:3] }), want: "components"},
		{name: "status value unknown", url: status, status: 200, header: okHeaders("no-store"),
			body: edit(statusDoc(), func(o obj) { o["status"] = "down" }), want: "status"},

		// Errors that break their schema.
		{name: "wrong error code for 400", url: files, status: 400, header: errorHeaders(),
			body: errorBody("invalid_request_error", "not_found"), want: "does not match BadRequestError"},
		{name: "wrong error type for 503", url: files, status: 503, header: with(errorHeaders(), "Retry-After", "1"),
			body: errorBody("invalid_request_error", "storage_unavailable"), want: "does not match ServiceUnavailableError"},
		{name: "error with extra field", url: files, status: 400, header: errorHeaders(),
			body: edit(errorBody("invalid_request_error", "parameter_invalid"), func(o obj) { o["error"].(obj)["detail"] = "x" }),
			want: "detail"},
		{name: "error without message", url: files, status: 400, header: errorHeaders(),
			body: edit(errorBody("invalid_request_error", "parameter_invalid"), func(o obj) { delete(o["error"].(obj), "message") }),
			want: "message"},
		{name: "error outside the document", url: "http://127.0.0.1:1/nope", status: 404, header: errorHeaders(),
			body: obj{"error": "not found"}, want: "does not match NotFoundError"},
		{name: "request_id differs from the header", url: files, status: 400, header: errorHeaders(),
			body: edit(errorBody("invalid_request_error", "parameter_invalid"), func(o obj) { o["error"].(obj)["request_id"] = "req_other" }),
			want: "error.request_id"},

		// Headers that break the contract.
		{name: "200 without Cache-Control", url: files, status: 200, header: with(filesOK, "Cache-Control"),
			body: filesPage(), want: "header Cache-Control is missing"},
		{name: "regions cached for 60s", url: regions, status: 200, header: okHeaders("public, max-age=60"),
			body: page(nil), want: "header Cache-Control"},
		{name: "weak ETag on 200", url: files, status: 200, header: with(filesOK, "ETag", `W/"abc"`),
			body: filesPage(), want: "header ETag"},
		{name: "no ETag", url: status, status: 200, header: with(okHeaders("no-store"), "ETag"),
			body: statusDoc(), want: "header ETag is missing"},
		{name: "Content-Type with charset", url: files, status: 200,
			header: with(filesOK, "Content-Type", "application/json; charset=utf-8"), body: filesPage(), want: "Content-Type"},
		{name: "error without Content-Type", url: files, status: 400, header: with(errorHeaders(), "Content-Type"),
			body: errorBody("invalid_request_error", "parameter_invalid"), want: "Content-Type"},
		{name: "error cached", url: files, status: 400, header: with(errorHeaders(), "Cache-Control", "public, max-age=60"),
			body: errorBody("invalid_request_error", "parameter_invalid"), want: "header Cache-Control"},
		{name: "no nosniff", url: files, status: 200, header: with(filesOK, "X-Content-Type-Options"),
			body: filesPage(), want: "X-Content-Type-Options"},
		{name: "no CSP", url: files, status: 400, header: with(errorHeaders(), "Content-Security-Policy"),
			body: errorBody("invalid_request_error", "parameter_invalid"), want: "Content-Security-Policy"},
		{name: "405 without Allow", method: "PUT", url: status, status: 405, header: errorHeaders(),
			body: errorBody("invalid_request_error", "method_not_allowed"), want: "header Allow is missing"},
		{name: "405 allowing POST", method: "PUT", url: status, status: 405, header: with(errorHeaders(), "Allow", "GET, HEAD, POST"),
			body: errorBody("invalid_request_error", "method_not_allowed"), want: "header Allow"},
		{name: "503 without Retry-After", url: files, status: 503, header: errorHeaders(),
			body: errorBody("api_error", "storage_unavailable"), want: "header Retry-After is missing"},
		{name: "Retry-After as a date", url: files, status: 503,
			header: with(errorHeaders(), "Retry-After", "Fri, 20 Nov 2026 14:03:07 GMT"),
			body:   errorBody("api_error", "storage_unavailable"), want: "header Retry-After"},
		{name: "401 without WWW-Authenticate", url: files, status: 401, header: errorHeaders(),
			body: errorBody("authentication_error", "api_key_invalid"), want: "header WWW-Authenticate is missing"},
		{name: "bad RateLimit", url: files, status: 200, header: with(filesOK, "RateLimit", "limit=100"),
			body: filesPage(), want: "header RateLimit"},
		{name: "request id not kept", url: files, reqHeader: http.Header{"X-Request-Id": {"lb-7"}}, status: 200,
			header: filesOK, body: filesPage(), want: "must be kept"},
		{name: "request id not generated as req_", url: files, status: 200,
			header: with(filesOK, "X-Request-Id", "7fQ2"), body: filesPage(), want: "req_"},
		{name: "no request id", url: files, status: 200, header: with(filesOK, "X-Request-Id"),
			body: filesPage(), want: "header X-Request-Id is missing"},

		// Statuses and bodies the operation does not have.
		{name: "undocumented status", url: files, status: 201, header: filesOK, body: filesPage(),
			want: "status 201 is not documented"},
		{name: "404 on the document", url: "http://127.0.0.1:1/api/v1/openapi.json", status: 404, header: errorHeaders(),
			body: errorBody("invalid_request_error", "not_found"), want: "status 404 is not documented"},
		{name: "401 on status", url: status, status: 401, header: with(errorHeaders(), "WWW-Authenticate", "Bearer"),
			body: errorBody("authentication_error", "authentication_required"), want: "status 401 is not documented"},
		{name: "200 outside the document", url: "http://127.0.0.1:1/api/v1/file", status: 200, header: filesOK,
			body: filesPage(), want: "a path outside the document"},
		{name: "POST answered 200", method: "POST", url: files, status: 200, header: filesOK, body: filesPage(),
			want: "must get an error"},
		{name: "HEAD with a body", method: "HEAD", url: files, status: 200, header: filesOK, body: filesPage(),
			want: "the body must be empty"},
		{name: "HEAD without Content-Type", method: "HEAD", url: files, status: 200, header: with(filesOK, "Content-Type"),
			want: "Content-Type"},
		{name: "304 with a body", url: files, reqHeader: http.Header{"If-None-Match": {`"e3b0c44298fc1c14"`}}, status: 304,
			header: okHeaders("public, max-age=60"), body: filesPage(), want: "the body must be empty"},
		{name: "304 without If-None-Match", url: files, status: 304, header: okHeaders("public, max-age=60"),
			want: "without If-None-Match"},
		{name: "304 to another tag", url: files, reqHeader: http.Header{"If-None-Match": {`"other"`}}, status: 304,
			header: okHeaders("public, max-age=60"), want: "does not match"},
		{name: "304 without ETag", url: files, reqHeader: http.Header{"If-None-Match": {"*"}}, status: 304,
			header: with(okHeaders("public, max-age=60"), "ETag"), want: "header ETag is missing"},
		{name: "not JSON", url: files, status: 200, header: filesOK, body: []byte("<html>"), want: "not JSON"},
		{name: "gzip not asked for", url: files, status: 200,
			header: with(with(filesOK, "Content-Encoding", "gzip"), "Vary", "Accept-Encoding"), body: gzipped(t, filesPage()),
			want: "does not accept gzip"},
		{name: "gzip refused with q=0", url: files, reqHeader: http.Header{"Accept-Encoding": {"gzip;q=0"}}, status: 200,
			header: with(with(filesOK, "Content-Encoding", "gzip"), "Vary", "Accept-Encoding"), body: gzipped(t, filesPage()),
			want: "does not accept gzip"},
		{name: "gzip without Vary", url: files, reqHeader: http.Header{"Accept-Encoding": {"gzip"}}, status: 200,
			header: with(filesOK, "Content-Encoding", "gzip"), body: gzipped(t, filesPage()), want: "Vary"},
		{name: "gzip that is not", url: files, reqHeader: http.Header{"Accept-Encoding": {"gzip"}}, status: 200,
			header: with(with(filesOK, "Content-Encoding", "gzip"), "Vary", "Accept-Encoding"), body: filesPage(),
			want: "does not decompress"},

		// Requests the server must have refused.
		{name: "accepted unknown parameter", url: files + "?sort=asc", status: 200, header: filesOK, body: filesPage(),
			want: `unknown parameter "sort"`},
		{name: "accepted parameter on regions", url: regions + "?limit=5", status: 200,
			header: okHeaders("public, max-age=300"), body: page(nil), want: `unknown parameter "limit"`},
		{name: "accepted repeated limit", url: files + "?limit=2&limit=2", status: 200, header: filesOK, body: filesPage(),
			want: "given 2 times"},
		{name: "accepted limit 0", url: files + "?limit=0", status: 200, header: filesOK, body: filesPage(),
			want: "the document refuses it"},
		{name: "accepted limit 101", url: files + "?limit=101", status: 200, header: filesOK, body: filesPage(),
			want: "the document refuses it"},
		{name: "accepted malformed region", url: assets + "?region=fra1", status: 200, header: okHeaders("public, max-age=60"),
			body: page(nil), want: "the document refuses it"},

		// Pages that break the paging rules.
		{name: "page larger than limit", url: files + "?limit=1", status: 200, header: filesOK, body: filesPage(),
			want: "more than the limit of 1"},
		{name: "files out of order", url: files, status: 200, header: filesOK,
			body: page(cursor, file("fil_A1", "2026-11-20T14:03:07Z"), file("fil_B2", "2026-11-20T14:03:07Z")),
			want: "out of order"},
		{name: "files oldest first", url: files, status: 200, header: filesOK,
			body: page(cursor, file("fil_B2", "2026-11-19T14:03:07Z"), file("fil_A1", "2026-11-20T14:03:07Z")),
			want: "out of order"},
		{name: "regions out of order", url: regions, status: 200, header: okHeaders("public, max-age=300"),
			body: page(nil, region("FRA1"), region("AMS1")), want: "out of order"},
		{name: "no Link with has_more", url: files, status: 200, header: with(filesOK, "Link"), body: filesPage(),
			want: "one Link header"},
		{name: "Link without has_more", url: files, status: 200, header: with(filesOK, "Link", filesLink),
			body: lastPage, want: "has_more is false"},
		{name: "Link to another cursor", url: files, status: 200,
			header: with(filesOK, "Link", `</api/v1/files?cursor=Zm9v>; rel="next"`), body: filesPage(), want: "next_cursor is"},
		{name: "Link that is absolute", url: files, status: 200,
			header: with(filesOK, "Link", `<http://127.0.0.1:41234/api/v1/files?cursor=`+cursor+`>; rel="next"`),
			body:   filesPage(), want: "header Link"},
		{name: "Link dropping the limit", url: files + "?limit=2", status: 200, header: filesOK, body: filesPage(),
			want: "limit"},
		{name: "Link changing the limit", url: files + "?limit=02", status: 200,
			header: with(filesOK, "Link", `</api/v1/files?limit=3&cursor=`+cursor+`>; rel="next"`), body: filesPage(), want: "limit"},
		{name: "Link dropping the region", url: assets + "?region=FRA1", status: 200,
			header: with(okHeaders("public, max-age=60"), "Link", `</api/v1/assets?cursor=`+cursor+`>; rel="next"`),
			body:   page(cursor, asset("ast_1", "2026-11-20T14:03:07Z", "FRA1")), want: "region"},
		{name: "assets of another region", url: assets + "?region=FRA1", status: 200, header: okHeaders("public, max-age=60"),
			body: page(nil, asset("ast_1", "2026-11-20T14:03:07Z", "AMS1")), want: `region "AMS1"`},
	}
	v := NewValidator(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel() // one Validator serves every subtest, as it serves parallel tests
			method := tt.method
			if method == "" {
				method = http.MethodGet
			}
			req := httptest.NewRequest(method, tt.url, nil)
			for name, values := range tt.reqHeader {
				req.Header[name] = values
			}
			res, body := answer(t, tt.status, tt.header, tt.body)
			f := &failures{}
			v.Check(f, req, res, body)
			got := strings.Join(f.messages, "\n")
			switch {
			case tt.want == "" && got != "":
				t.Errorf("Check failed a valid answer:\n%s", got)
			case tt.want != "" && got == "":
				t.Errorf("Check passed an answer that breaks the contract; want a failure about %q", tt.want)
			case tt.want != "" && !strings.Contains(got, tt.want):
				t.Errorf("Check failed, but not about %q:\n%s", tt.want, got)
			}
		})
	}
}

// answer builds a response as a server would send it, with an
// httptest.ResponseRecorder, and reads its body back.
func answer(t *testing.T, status int, header http.Header, body any) (*http.Response, []byte) {
	t.Helper()
	rec := httptest.NewRecorder()
	for name, values := range header {
		rec.Header()[name] = values
	}
	rec.WriteHeader(status)
	switch b := body.(type) {
	case nil:
	case []byte:
		rec.Body.Write(b)
	default:
		if err := json.NewEncoder(rec.Body).Encode(b); err != nil {
			t.Fatal(err)
		}
	}
	res := rec.Result()
	got, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, got
}

// TestCheckReportsEveryProblem checks that one failure lists each problem,
// so that a broken answer is fixed in one round.
func TestCheckReportsEveryProblem(t *testing.T) {
	v := NewValidator(t)
	req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:1/api/v1/files", nil)
	body := edit(filesPage(), func(o obj) { item(o, 0)["checksum"] = "md5:x" })
	res, raw := answer(t, 200, with(with(okHeaders("public, max-age=60"), "Cache-Control"), "Link"), body)
	f := &failures{}
	v.Check(f, req, res, raw)
	if len(f.messages) != 1 {
		t.Fatalf("Check reported %d failures, want one that lists every problem: %q", len(f.messages), f.messages)
	}
	for _, want := range []string{"Cache-Control is missing", "checksum", "one Link header"} {
		if !strings.Contains(f.messages[0], want) {
			t.Errorf("the failure does not mention %q:\n%s", want, f.messages[0])
		}
	}
}

// TestCheckLeavesTheRequestAlone checks that validating a request does not
// fill in parameter defaults, which would change what the caller sent.
func TestCheckLeavesTheRequestAlone(t *testing.T) {
	v := NewValidator(t)
	req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:1/api/v1/files", nil)
	res, raw := answer(t, 200, with(okHeaders("public, max-age=60"), "Link", `</api/v1/files?cursor=`+cursor+`>; rel="next"`), filesPage())
	v.Check(t, req, res, raw)
	if q := req.URL.RawQuery; q != "" {
		t.Errorf("Check changed the request's query to %q", q)
	}
}
