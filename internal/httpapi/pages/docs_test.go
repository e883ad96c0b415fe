package pages

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"html"
	"regexp"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/cdnapi/cdnapi/api"
)

// TestDocsCoverContract: every path, operation, parameter, header, error
// code, response, schema and example of the OpenAPI document appears on the
// generated page.
func TestDocsCoverContract(t *testing.T) {
	p, err := Docs(api.JSON(), Addresses{})
	if err != nil {
		t.Fatal(err)
	}
	page := html.UnescapeString(string(p.Body))
	var doc struct {
		Paths      map[string]map[string]json.RawMessage
		Components struct {
			Parameters map[string]struct{ Name string }
			Headers    map[string]json.RawMessage
			Responses  map[string]struct{ Headers map[string]json.RawMessage }
			Schemas    map[string]json.RawMessage
		}
	}
	if err := json.Unmarshal(api.JSON(), &doc); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{} // text → what it is
	for path, item := range doc.Paths {
		want[path] = "path"
		for method, raw := range item {
			var op struct {
				OperationID string
				Parameters  []struct{ Name string }
			}
			if method == "servers" || json.Unmarshal(raw, &op) != nil {
				continue
			}
			want[`id="`+op.OperationID+`"`] = "operation of " + path
			want[`<span class="m">`+strings.ToUpper(method)+`</span>`] = "method"
			for _, prm := range op.Parameters {
				if prm.Name != "" {
					want["<dt>"+prm.Name] = "parameter"
				}
			}
		}
	}
	for _, prm := range doc.Components.Parameters {
		want["<dt>"+prm.Name] = "parameter"
	}
	for _, r := range doc.Components.Responses {
		for h := range r.Headers {
			want["<dt>"+h] = "header"
		}
	}
	for name := range doc.Components.Responses {
		want[`id="response-`+name+`"`] = "response"
	}
	for name := range doc.Components.Schemas {
		want[`id="schema-`+name+`"`] = "schema"
	}
	// Each error status has its own schema; together they name every code.
	var codes []string
	for name, raw := range doc.Components.Schemas {
		if !strings.HasSuffix(name, "Error") {
			continue
		}
		var errSchema struct {
			Properties struct {
				Error struct {
					Properties struct{ Code, Type struct{ Enum []string } }
				}
			}
		}
		if err := json.Unmarshal(raw, &errSchema); err != nil {
			t.Fatal(err)
		}
		codes = append(codes, errSchema.Properties.Error.Properties.Code.Enum...)
		for _, c := range append(errSchema.Properties.Error.Properties.Code.Enum, errSchema.Properties.Error.Properties.Type.Enum...) {
			want[c] = "error code or type"
		}
	}
	if len(codes) < 11 {
		t.Fatalf("read %d error codes from the document", len(codes))
	}
	for _, s := range []string{"maximum 100", "minimum 1", "default 20", "2026-11-20T14:03:07Z", "req_8Kq2hT4mZ0pX",
		"http://127.0.0.1:8080", "http://127.0.0.1:8081", "API address", "edge address", "^inc_[A-Za-z0-9]{1,64}$"} {
		want[s] = "limit, example or address"
	}
	for text, what := range want {
		if !strings.Contains(page, text) {
			t.Errorf("the page lacks %s %q", what, text)
		}
	}
	// Every error code is named on the response that can carry it: the 400
	// response lists the four of invalid requests.
	i := strings.Index(page, `id="schema-BadRequestError"`)
	if i < 0 || !strings.Contains(page[i:min(len(page), i+3000)], "parameter_invalid, parameter_unknown, cursor_invalid, region_unknown") {
		t.Error("BadRequestError does not list its codes")
	}
}

// TestPageWeight measures the pages as sent gzip-coded; run with -v for the
// figures.
func TestPageWeight(t *testing.T) {
	docs, err := Docs(api.JSON(), Addresses{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		body  []byte
		limit int
	}{
		{"/docs", docs.Body, 150 << 10},
		{"/status", Status(sampleStatus()).Body, 30 << 10},
		{"/", Index(Addresses{}, true).Body, 10 << 10},
	} {
		var b bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&b, gzip.DefaultCompression)
		zw.Write(tc.body)
		zw.Close()
		t.Logf("%s: %d bytes, %d gzip-coded", tc.name, len(tc.body), b.Len())
		if b.Len() > tc.limit {
			t.Errorf("%s: %d bytes gzip-coded, over %d", tc.name, b.Len(), tc.limit)
		}
	}
}

// opExample is the example of one operation as the page shows it.
type opExample struct {
	id, request, status, body string
}

var (
	opArticle = regexp.MustCompile(`(?s)<article class="op" id="([A-Za-z]+)">(.*?)</article>`)
	exBlock   = regexp.MustCompile(`(?s)<pre class="ex"><code>(.*?)</code></pre>\s*<p class="c">answers (\d+) with</p>\s*<pre class="ex"><code>(.*?)</code></pre>`)
)

// pageExamples returns the GET examples of a rendered reference, in order.
func pageExamples(t *testing.T, page []byte) []opExample {
	t.Helper()
	var out []opExample
	for _, m := range opArticle.FindAllSubmatch(page, -1) {
		ex := exBlock.FindSubmatch(m[2])
		if ex == nil {
			t.Errorf("operation %s has no example request and answer", m[1])
			continue
		}
		out = append(out, opExample{string(m[1]), html.UnescapeString(string(ex[1])), string(ex[2]), html.UnescapeString(string(ex[3]))})
	}
	return out
}

// TestDocsExamples: every GET operation has an example request on the
// address that serves it, and an example answer that its schema accepts,
// as the tests of every real answer check it (kin-openapi, JSON Schema
// 2020-12). The requests are run against a real server in cmd/cdnapi.
func TestDocsExamples(t *testing.T) {
	addrs := Addresses{API: "http://api.test:18080", Edge: "http://edge.test:18081"}
	p, err := Docs(api.JSON(), addrs)
	if err != nil {
		t.Fatal(err)
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(api.JSON())
	if err != nil {
		t.Fatal(err)
	}
	examples := pageExamples(t, p.Body)
	seen := map[string]bool{}
	for _, ex := range examples {
		seen[ex.id] = true
		var path string
		var op *openapi3.Operation
		for pth, item := range doc.Paths.Map() {
			if item.Get != nil && item.Get.OperationID == ex.id {
				path, op = pth, item.Get
			}
		}
		if op == nil {
			t.Errorf("example of %s, which is no GET operation", ex.id)
			continue
		}
		base := addrs.API
		if path == "/api/v1/regions" || path == "/api/v1/assets" {
			base = addrs.Edge
		}
		if want := "curl -s '" + base + path; !strings.HasPrefix(strings.Replace(ex.request, "curl -sN ", "curl -s ", 1), want) {
			t.Errorf("%s: request %q, want it to start with %q", ex.id, ex.request, want)
		}
		content := op.Responses.Status(200).Value.Content
		if content.Get("application/json") == nil {
			// The feed and the stream: their schema's own example, whose
			// form their handlers' tests check.
			for media, mt := range content {
				if want := mt.Schema.Value.Examples; len(want) == 0 || ex.body != want[0] {
					t.Errorf("%s: the example answer is not the %s example of the document:\n%s", ex.id, media, ex.body)
				}
				if stream := strings.HasPrefix(ex.request, "curl -sN "); stream != (media == "text/event-stream") {
					t.Errorf("%s: request %q for %s", ex.id, ex.request, media)
				}
			}
			continue
		}
		var body any
		if err := json.Unmarshal([]byte(ex.body), &body); err != nil {
			t.Errorf("%s: the example answer is not JSON: %v\n%s", ex.id, err, ex.body)
			continue
		}
		schema := content.Get("application/json").Schema.Value
		if err := schema.VisitJSON(body, openapi3.EnableJSONSchema2020(), openapi3.VisitAsResponse()); err != nil {
			t.Errorf("%s: the example answer does not match its schema: %v\n%s", ex.id, err, ex.body)
		}
	}
	for pth, item := range doc.Paths.Map() {
		if item.Get != nil && !seen[item.Get.OperationID] {
			t.Errorf("%s %s has no example", item.Get.OperationID, pth)
		}
		for _, o := range []*openapi3.Operation{item.Head, item.Options} {
			if o != nil && !regexp.MustCompile(`(?s)id="`+o.OperationID+`">.*?<pre class="ex"><code>curl `).Match(p.Body) {
				t.Errorf("%s has no example request", o.OperationID)
			}
		}
	}
	// The page names the addresses it was given; the defaults only as the
	// document's defaults, never in an example.
	page := string(p.Body)
	for _, want := range []string{"<code>http://api.test:18080</code>", "<code>http://edge.test:18081</code>",
		"curl -s &#39;http://edge.test:18081/api/v1/assets?region=FRA1&#39;"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(page, "&#39;http://127.0.0.1:808") {
		t.Error("an example names a default address, not the server's")
	}
}

// TestDocsNamesBreakBetweenWords: a component name may break only between
// its words, where a <wbr> allows it, and never inside one (the response
// names of an operation's table once broke as "FilesNotModifi|ed"). The
// browser test checks the rendering at 375 pixels.
func TestDocsNamesBreakBetweenWords(t *testing.T) {
	p, err := Docs(api.JSON(), Addresses{})
	if err != nil {
		t.Fatal(err)
	}
	page := string(p.Body)
	for _, want := range []string{`<a href="#response-FilesNotModified">Files<wbr>Not<wbr>Modified</a>`,
		`<h3>Service<wbr>Unavailable<wbr>Error</h3>`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if regexp.MustCompile(`\.scroll td\{[^}]*anywhere`).MatchString(docsStyle) {
		t.Error("the names in the tables of responses break anywhere")
	}
	// The contents come before the reference in the page, so that they come
	// first on a narrow screen, where the two are one column.
	if toc, main := strings.Index(page, `<nav class="toc"`), strings.Index(page, `<main id="main">`); toc < 0 || toc > main {
		t.Errorf("contents at %d, main at %d: want the contents first", toc, main)
	}
}

// TestPagesDescribeThemselves: every page has a meta description.
func TestPagesDescribeThemselves(t *testing.T) {
	docs, err := Docs(api.JSON(), Addresses{})
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]Page{"/": Index(Addresses{}, true), "/docs": docs, "/status": Status(sampleStatus())} {
		m := regexp.MustCompile(`<meta name="description" content="([^"]{50,300})">`).FindSubmatch(p.Body)
		if m == nil {
			t.Errorf("%s has no meta description of 50 to 300 characters", name)
		}
	}
}
