// Package apitest checks the answers of the cdnapi service against its
// contract, the OpenAPI document of package api. Tests of other packages make
// real requests and hand each request, response and body to Validator.Check,
// which fails the test with every way the answer breaks the contract.
//
// The schemas and headers come from the document and are checked with
// kin-openapi, which validates OpenAPI 3.1 schemas as JSON Schema 2020-12. The
// rules the document can only state in prose (request IDs, paging, ordering,
// conditional requests, compression) are checked here by hand; see rules.go.
package apitest

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/klauspost/compress/zstd"

	"github.com/cdnapi/cdnapi/api"
)

// Validator checks HTTP answers against the OpenAPI document. It is safe for
// concurrent use by parallel tests.
type Validator struct {
	doc *openapi3.T
	// outside holds the answers a path that is not in the document may get:
	// the document's own not-found answer, and the answers of the middleware
	// that runs before routing.
	outside *openapi3.Operation
	// defaultLimit is the page size of a list asked for without limit.
	defaultLimit int
}

// loadDocument parses and validates the document once per test binary: it
// never changes, and every test of every package needs it.
var loadDocument = sync.OnceValues(func() (*openapi3.T, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(api.JSON())
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	return doc, nil
})

// outsideStatuses are the answers a path outside the document may get.
var outsideStatuses = map[int]string{
	http.StatusNotFound:            "NotFound",
	http.StatusTooManyRequests:     "TooManyRequests",
	http.StatusInternalServerError: "InternalError",
}

// NewValidator returns a Validator for the embedded OpenAPI document. It fails
// tb at once if the document does not load or is not valid OpenAPI.
func NewValidator(tb testing.TB) *Validator {
	tb.Helper()
	doc, err := loadDocument()
	if err != nil {
		tb.Fatalf("apitest: the OpenAPI document of package api is broken: %v", err)
	}
	outside := openapi3.NewOperation()
	for status, name := range outsideStatuses {
		ref := doc.Components.Responses[name]
		if ref == nil {
			tb.Fatalf("apitest: the OpenAPI document has no components/responses/%s", name)
		}
		outside.AddResponse(status, ref.Value)
	}
	limit := doc.Components.Parameters["limit"]
	if limit == nil || limit.Value.Schema == nil {
		tb.Fatalf("apitest: the OpenAPI document has no components/parameters/limit")
	}
	def, ok := limit.Value.Schema.Value.Default.(float64)
	if !ok {
		tb.Fatalf("apitest: components/parameters/limit has no numeric default")
	}
	return &Validator{doc: doc, outside: outside, defaultLimit: int(def)}
}

// Check fails tb unless the answer res, whose body was read into body, is one
// the contract allows for req. It checks that:
//   - the status is documented for the operation of the request's path and
//     method, whatever the host and port (tests listen on random ports);
//   - a request the server accepted is one the document allows: its
//     parameters are known, given once, and valid;
//   - every header the document declares is present when required and
//     matches its schema;
//   - the body matches the schema with Content-Type application/json, and
//     is empty for HEAD, 304 and 204;
//   - the rules that schemas cannot state hold (see rules.go).
//
// Answers on paths outside the document must be a documented error, such as
// 404 not_found; so Check is not for the human pages.
// A gzip- or zstd-encoded body is decompressed before it is checked.
func (v *Validator) Check(tb testing.TB, req *http.Request, res *http.Response, body []byte) {
	tb.Helper()
	c := &check{v: v, req: req, res: res, raw: body}
	c.run()
	if len(c.problems) > 0 {
		tb.Errorf("apitest: %s %s answered %d against the contract:\n\t%s\n\tbody: %s",
			req.Method, req.URL.RequestURI(), res.StatusCode,
			strings.Join(c.problems, "\n\t"), snippet(c.raw))
	}
}

// zstdDecoder decodes zstd bodies; DecodeAll may be called concurrently.
var zstdDecoder, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0))

// check is one run of Check; it collects problems instead of stopping at
// the first, so that one failure shows everything that is wrong.
type check struct {
	v        *Validator
	req      *http.Request
	res      *http.Response
	raw      []byte // the body as received
	json     any    // the decoded body, after Content-Encoding, when it is JSON
	problems []string
}

func (c *check) failf(format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
}

func (c *check) run() {
	route, known := c.route()
	status := c.res.StatusCode
	responseRef := route.Operation.Responses.Status(status)
	if responseRef == nil || responseRef.Value == nil {
		c.failf("status %d is not documented for %s; documented: %s",
			status, describe(route, known), documentedStatuses(route.Operation))
		return
	}
	response := responseRef.Value
	if !known && status < 400 {
		c.failf("%s must get an error, not %d", describe(route, known), status)
	}
	if status < 400 && known {
		c.checkRequest(route)
	}
	c.checkHeaders(response.Headers)
	c.checkBody(route, response)
	c.checkRules(route)
}

// route finds the operation for the request's path and method. A method the
// path does not document is checked against the path's GET, whose error
// answers cover it; a path outside the document against v.outside. known
// reports whether the path and method are both in the document.
func (c *check) route() (route *routers.Route, known bool) {
	path := c.req.URL.Path
	item := c.v.doc.Paths.Value(path)
	if item == nil {
		return &routers.Route{Spec: c.v.doc, Path: path, PathItem: &openapi3.PathItem{},
			Method: c.req.Method, Operation: c.v.outside}, false
	}
	op := item.GetOperation(c.req.Method)
	known = op != nil
	if !known {
		op = item.Get
	}
	return &routers.Route{Spec: c.v.doc, Path: path, PathItem: item, Method: c.req.Method, Operation: op}, known
}

// checkRequest checks a request the server accepted: a server that answers
// 200 to a request the contract refuses is as wrong as a bad answer.
func (c *check) checkRequest(route *routers.Route) {
	in := &openapi3filter.RequestValidationInput{Request: c.req, Route: route, Options: &openapi3filter.Options{
		MultiError:          true,
		SkipSettingDefaults: true, // validating a request must not change it
		AuthenticationFunc:  openapi3filter.NoopAuthenticationFunc,
	}}
	if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
		c.failf("the request was accepted, but the document refuses it: %s", explain(err))
	}
	if c.req.Method != http.MethodGet && c.req.Method != http.MethodHead {
		return
	}
	params := route.Operation.Parameters
	query := c.req.URL.Query()
	for _, name := range slices.Sorted(maps.Keys(query)) {
		if params.GetByInAndName(openapi3.ParameterInQuery, name) == nil {
			c.failf("the request was accepted with the unknown parameter %q; it must get 400 parameter_unknown", name)
		} else if len(query[name]) > 1 {
			c.failf("the request was accepted with %q given %d times; it must get 400 parameter_invalid", name, len(query[name]))
		}
	}
}

// checkHeaders checks the response headers the document declares. Repeated
// header lines are joined with ", " as RFC 9110 allows for list headers, so
// that a header split over two lines is judged by what it means.
func (c *check) checkHeaders(headers openapi3.Headers) {
	for _, name := range slices.Sorted(maps.Keys(headers)) {
		ref := headers[name]
		if ref == nil || ref.Value == nil {
			continue
		}
		h := ref.Value
		values := c.res.Header.Values(name)
		if len(values) == 0 {
			if h.Required {
				c.failf("header %s is missing", name)
			}
			continue
		}
		if h.Schema == nil || h.Schema.Value == nil {
			continue
		}
		raw := strings.Join(values, ", ")
		var value any = raw
		if h.Schema.Value.Type.Is(openapi3.TypeInteger) {
			n, err := strconv.ParseUint(raw, 10, 63)
			if err != nil {
				c.failf("header %s: %q is not a non-negative decimal integer", name, raw)
				continue
			}
			value = float64(n)
		}
		if err := h.Schema.Value.VisitJSON(value, openapi3.EnableJSONSchema2020()); err != nil {
			c.failf("header %s: %q does not match the document: %s", name, raw, explain(err))
		}
	}
}

// checkBody checks the Content-Type and the body. Answers without content
// (HEAD, 304, 204) must have an empty body; HEAD still carries the
// Content-Type of the GET it mirrors.
func (c *check) checkBody(route *routers.Route, response *openapi3.Response) {
	status := c.res.StatusCode
	content := response.Content
	if c.req.Method == http.MethodHead && route.PathItem.Get != nil {
		// A HEAD operation documents no content (generated clients would
		// try to decode one), but carries the Content-Type of its GET.
		if get := route.PathItem.Get.Responses.Status(status); get != nil && get.Value != nil {
			content = get.Value.Content
		}
	}
	hasContent := len(content) > 0 && status != http.StatusNotModified && status != http.StatusNoContent
	if hasContent && content.Get("application/json") == nil {
		// A feed or a stream: its media type is the document's, and its
		// body is checked by its own tests.
		ct, _, _ := strings.Cut(c.res.Header.Get("Content-Type"), ";")
		if content.Get(ct) == nil {
			c.failf("Content-Type is %q, which the document does not give for %d", c.res.Header.Get("Content-Type"), status)
		}
		return
	}
	if hasContent {
		if ct := c.res.Header.Values("Content-Type"); len(ct) != 1 || ct[0] != "application/json" {
			c.failf("Content-Type is %q, want exactly \"application/json\"", strings.Join(ct, ", "))
		}
	}
	if !hasContent || c.req.Method == http.MethodHead {
		if len(c.raw) != 0 {
			c.failf("the body must be empty, but has %d bytes", len(c.raw))
		}
		return
	}

	body := c.raw
	switch coding := c.res.Header.Get("Content-Encoding"); coding {
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(c.raw))
		if err == nil {
			body, err = io.ReadAll(zr)
		}
		if err != nil {
			c.failf("Content-Encoding is gzip, but the body does not decompress: %v", err)
			return
		}
	case "zstd":
		var err error
		if body, err = zstdDecoder.DecodeAll(c.raw, nil); err != nil {
			c.failf("Content-Encoding is zstd, but the body does not decompress: %v", err)
			return
		}
	}
	if err := json.Unmarshal(body, &c.json); err != nil {
		c.failf("the body is not JSON: %v", err)
		return
	}

	// This is the body check of openapi3filter.ValidateResponse, which cannot
	// be used whole: it skips HEAD and 304, stops at the first bad header, and
	// reads only the first line of a repeated header.
	schema := response.Content.Get("application/json")
	if schema == nil || schema.Schema == nil || schema.Schema.Value == nil {
		c.failf("the document has no application/json schema for %d", status)
		return
	}
	err := schema.Schema.Value.VisitJSON(c.json, openapi3.EnableJSONSchema2020(), openapi3.VisitAsResponse())
	if err != nil {
		c.failf("the body does not match %s: %s", schemaName(schema.Schema), explain(err))
	}
}

// describe names the operation a route stands for, in failure messages.
func describe(route *routers.Route, known bool) string {
	switch {
	case route.PathItem.Get == nil:
		return fmt.Sprintf("%s %s (a path outside the document)", route.Method, route.Path)
	case !known:
		return fmt.Sprintf("%s %s (a method the path does not take)", route.Method, route.Path)
	}
	return fmt.Sprintf("%s %s", route.Method, route.Path)
}

// schemaName names a schema in failure messages by its component name.
func schemaName(ref *openapi3.SchemaRef) string {
	if i := strings.LastIndexByte(ref.Ref, '/'); i >= 0 {
		return ref.Ref[i+1:]
	}
	return "the schema"
}

func documentedStatuses(op *openapi3.Operation) string {
	return strings.Join(slices.Sorted(maps.Keys(op.Responses.Map())), " ")
}

// explain turns a kin-openapi error into one line that lists each failing
// value with its JSON pointer, without the wrappers and schema dumps that
// its own messages nest around them.
func explain(err error) string {
	var reasons []string
	var walk func(error)
	walk = func(err error) {
		switch e := err.(type) {
		case openapi3.MultiError:
			for _, inner := range e {
				walk(inner)
			}
		case *openapi3filter.RequestError:
			if e.Parameter != nil && e.Err != nil {
				before := len(reasons)
				walk(e.Err)
				for i := before; i < len(reasons); i++ {
					reasons[i] = fmt.Sprintf("parameter %q: %s", e.Parameter.Name, reasons[i])
				}
				return
			}
			reasons = append(reasons, oneLine(e.Error()))
		case *openapi3.SchemaError:
			if inner := errors.Unwrap(e.Origin); inner != nil {
				if _, ok := inner.(openapi3.MultiError); ok {
					walk(inner)
					return
				}
			}
			reason := e.Reason
			// The 2020-12 validator's reasons start with kin-openapi's own
			// pointer, which repeats parts of the path, then the real one.
			if rest, ok := strings.CutPrefix(reason, "error at "); ok {
				if _, after, found := strings.Cut(rest, `": `); found {
					reason = after
				}
			}
			if len(e.JSONPointer()) > 0 && !strings.HasPrefix(reason, "at ") {
				reason = fmt.Sprintf("at '/%s': %s", strings.Join(e.JSONPointer(), "/"), reason)
			}
			reasons = append(reasons, oneLine(reason))
		default:
			reasons = append(reasons, oneLine(err.Error()))
		}
	}
	walk(err)
	return strings.Join(slices.Compact(reasons), "; ")
}

// oneLine flattens a multi-line message so that each problem stays on one
// line of the failure.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// snippet returns the start of a body for failure messages.
func snippet(b []byte) string {
	const max = 400
	if len(b) > max {
		return strconv.Quote(string(b[:max])) + "…"
	}
	return strconv.Quote(string(b))
}
