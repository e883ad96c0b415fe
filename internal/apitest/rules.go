package apitest

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers"
)

// This file checks the rules of the contract that the OpenAPI document can
// state only in prose, because they tie one part of an exchange to another:
// the request ID to the request, the Link header to the body, a page to its
// limit, a 304 to its If-None-Match.

// saneRequestID is the shape of an incoming X-Request-Id the server keeps.
var saneRequestID = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// The lists and how their items are ordered.
const (
	filesPath   = "/api/v1/files"
	assetsPath  = "/api/v1/assets"
	regionsPath = "/api/v1/regions"
)

// checkRules checks the rules that tie the answer to the request.
func (c *check) checkRules(route *routers.Route) {
	c.checkRequestID()
	c.checkEncoding()
	switch c.res.StatusCode {
	case http.StatusNotModified:
		c.checkNotModified()
	case http.StatusOK:
		if c.json != nil {
			c.checkNextCursor()
			c.checkList(route)
		}
	}
}

// checkRequestID checks that a sane incoming X-Request-Id is kept, that one
// is generated as req_… otherwise, and that an error body names the same ID.
func (c *check) checkRequestID() {
	got := c.res.Header.Get("X-Request-Id")
	if got == "" {
		return // reported with the headers
	}
	switch in := c.req.Header.Values("X-Request-Id"); {
	case len(in) > 1:
		// The contract does not say which of several lines is kept.
	case len(in) == 1 && saneRequestID.MatchString(in[0]):
		if got != in[0] {
			c.failf("X-Request-Id is %q, but the sane incoming ID %q must be kept", got, in[0])
		}
	case !strings.HasPrefix(got, "req_"):
		c.failf("X-Request-Id is %q; with no sane incoming ID one must be generated as req_…", got)
	}
	if body, ok := c.json.(map[string]any); ok {
		if e, ok := body["error"].(map[string]any); ok {
			if id, _ := e["request_id"].(string); id != got {
				c.failf("error.request_id is %q, but X-Request-Id is %q", id, got)
			}
		}
	}
}

// checkEncoding checks that a gzip or zstd body was asked for and is marked
// as varying with Accept-Encoding, so that caches keep the codings apart.
func (c *check) checkEncoding() {
	coding := c.res.Header.Get("Content-Encoding")
	switch coding {
	case "":
		return
	case "gzip":
		if !acceptsGzip(c.req.Header.Values("Accept-Encoding")) {
			c.failf("the body is gzip-encoded, but the request does not accept gzip")
		}
	case "zstd":
		if !acceptsNamed(c.req.Header.Values("Accept-Encoding"), "zstd") {
			c.failf("the body is zstd-encoded, but the request does not name zstd")
		}
	default:
		c.failf("Content-Encoding %q is not one the document offers", coding)
	}
	if !hasToken(c.res.Header.Values("Vary"), "Accept-Encoding") {
		c.failf("the body is %s-encoded, but Vary does not name Accept-Encoding", coding)
	}
}

// acceptsNamed reports whether Accept-Encoding values name coding with a
// non-zero weight.
func acceptsNamed(values []string, coding string) bool {
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			name, params, _ := strings.Cut(part, ";")
			if strings.EqualFold(strings.TrimSpace(name), coding) && qValue(params) > 0 {
				return true
			}
		}
	}
	return false
}

// checkNotModified checks that a 304 answers an If-None-Match that its
// ETag matches.
func (c *check) checkNotModified() {
	inm := strings.Join(c.req.Header.Values("If-None-Match"), ", ")
	if inm == "" {
		c.failf("304 answers a request without If-None-Match")
		return
	}
	if etag := c.res.Header.Get("ETag"); etag != "" && !matchesWeakly(inm, etag) {
		c.failf("304 carries ETag %s, which If-None-Match %s does not match", etag, inm)
	}
}

// checkNextCursor checks, on every list, that next_cursor is null exactly
// when has_more is false. The document states this in prose: a oneOf over
// has_more, which JSON Schema could check, is more than code generators take.
func (c *check) checkNextCursor() {
	page, ok := c.json.(map[string]any)
	if !ok || page["object"] != "list" {
		return
	}
	hasMore, _ := page["has_more"].(bool)
	switch next, present := page["next_cursor"]; {
	case !present:
		// reported by the schema
	case hasMore && next == nil:
		c.failf("has_more is true, but next_cursor is null")
	case !hasMore && next != nil:
		c.failf("has_more is false, but next_cursor is %v; it must be null", next)
	}
}

// checkList checks a page of a list against its request: its size against
// limit, the Link header against has_more and next_cursor, the order of the
// items, and the region filter of assets.
func (c *check) checkList(route *routers.Route) {
	if route.Path != filesPath && route.Path != assetsPath && route.Path != regionsPath {
		return
	}
	page, ok := c.json.(map[string]any)
	if !ok {
		return // reported by the schema
	}
	data, _ := page["data"].([]any)
	hasMore, _ := page["has_more"].(bool)
	next, _ := json.Marshal(page["next_cursor"]) // a JSON string, or null
	query := c.req.URL.Query()

	switch links := c.res.Header.Values("Link"); {
	case !hasMore && len(links) > 0:
		c.failf("has_more is false, but there is a Link header")
	case hasMore && len(links) != 1:
		c.failf("has_more is true, so there must be one Link header to the next page; there are %d", len(links))
	case hasMore:
		c.checkNextLink(route, links[0], string(next))
	}

	if route.Operation.Parameters.GetByInAndName(openapi3.ParameterInQuery, "limit") != nil {
		limit := c.v.defaultLimit
		if s := query.Get("limit"); s != "" {
			limit, _ = strconv.Atoi(s) // checked by the request validation
		}
		if len(data) > limit {
			c.failf("the page has %d items, more than the limit of %d", len(data), limit)
		}
	}

	if route.Path == regionsPath {
		c.checkOrder(data, "code ascending", func(prev, cur map[string]any) bool {
			return str(prev, "code") < str(cur, "code")
		})
		return
	}
	c.checkOrder(data, "created_at descending, then id descending", func(prev, cur map[string]any) bool {
		pt, ct := str(prev, "created_at"), str(cur, "created_at")
		return pt > ct || pt == ct && str(prev, "id") > str(cur, "id")
	})
	if region := query.Get("region"); route.Path == assetsPath && region != "" {
		for i, item := range data {
			if m, ok := item.(map[string]any); ok && str(m, "region") != region {
				c.failf("data[%d] is of region %q, but the request asks for region %q", i, str(m, "region"), region)
			}
		}
	}
}

// checkNextLink checks that the Link header points, relative to the
// listener, at the same list with the same filter and limit, continued at
// next_cursor, which is given as JSON.
func (c *check) checkNextLink(route *routers.Route, link, next string) {
	start, end := strings.IndexByte(link, '<'), strings.IndexByte(link, '>')
	if start != 0 || end < 0 {
		return // reported by the header schema
	}
	u, err := url.Parse(link[1:end])
	if err != nil {
		c.failf("Link %s does not hold a URL: %v", link, err)
		return
	}
	if u.Scheme != "" || u.Host != "" || u.Path != route.Path {
		c.failf("Link %s must point at %s relative to the address", link, route.Path)
	}
	q, in := u.Query(), c.req.URL.Query()
	if got, _ := json.Marshal(q.Get("cursor")); string(got) != next {
		c.failf("Link %s carries cursor %s, but next_cursor is %s", link, got, next)
	}
	for name, values := range q {
		if route.Operation.Parameters.GetByInAndName(openapi3.ParameterInQuery, name) == nil || len(values) > 1 {
			c.failf("Link %s carries %q, which the list would refuse", link, name)
		}
	}
	if q.Get("region") != in.Get("region") {
		c.failf("Link %s must keep the request's region %q", link, in.Get("region"))
	}
	// The next page has the request's limit: the same number ("05" is 5,
	// which the Link may spell "5"), or, when the request left it out, none
	// or the default spelled out.
	want, got := in.Get("limit"), q.Get("limit")
	wantN, err := strconv.Atoi(want)
	if want == "" {
		wantN, err = c.v.defaultLimit, nil
	}
	if !(want == "" && got == "") && (err != nil || got != strconv.Itoa(wantN)) {
		c.failf("Link %s must keep the request's limit %q, as a plain number", link, want)
	}
}

// checkOrder checks that every item of data comes after the one before it,
// by inOrder.
func (c *check) checkOrder(data []any, order string, inOrder func(prev, cur map[string]any) bool) {
	for i := 1; i < len(data); i++ {
		prev, ok1 := data[i-1].(map[string]any)
		cur, ok2 := data[i].(map[string]any)
		if ok1 && ok2 && !inOrder(prev, cur) {
			c.failf("data[%d] and data[%d] are out of order; the list is ordered by %s", i-1, i, order)
		}
	}
}

func str(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

// acceptsGzip reports whether Accept-Encoding values accept gzip.
func acceptsGzip(values []string) bool {
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			coding, params, _ := strings.Cut(part, ";")
			coding = strings.ToLower(strings.TrimSpace(coding))
			if coding != "gzip" && coding != "*" {
				continue
			}
			if qValue(params) > 0 {
				return true
			}
		}
	}
	return false
}

// qValue returns the weight of an Accept-Encoding member from its
// parameters: 1 unless a q parameter says otherwise.
func qValue(params string) float64 {
	for p := range strings.SplitSeq(params, ";") {
		k, v, ok := strings.Cut(p, "=")
		if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
			q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return 0 // a malformed weight accepts nothing
			}
			return q
		}
	}
	return 1
}

// hasToken reports whether the comma-separated header values name token.
func hasToken(values []string, token string) bool {
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(part), token) {
				return true
			}
		}
	}
	return false
}

// matchesWeakly reports whether the If-None-Match value inm matches etag
// by the weak comparison of RFC 9110: "*", or an equal opaque tag with or
// without W/.
func matchesWeakly(inm, etag string) bool {
	if strings.TrimSpace(inm) == "*" {
		return true
	}
	return slices.Contains(entityTags(inm), opaqueTag(etag))
}

// entityTags returns the opaque tags of an If-None-Match list. It reads
// quoted tags rather than splitting on commas, which may occur inside them.
func entityTags(list string) []string {
	var tags []string
	for s := list; ; {
		s = strings.TrimLeft(s, " \t,")
		s = strings.TrimPrefix(s, "W/")
		if !strings.HasPrefix(s, `"`) {
			return tags
		}
		end := strings.IndexByte(s[1:], '"')
		if end < 0 {
			return tags
		}
		tags = append(tags, s[:end+2])
		s = s[end+2:]
	}
}

// opaqueTag returns etag without its weakness indicator.
func opaqueTag(etag string) string { return strings.TrimPrefix(strings.TrimSpace(etag), "W/") }
