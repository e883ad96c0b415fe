package pages

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"html"
	"strings"
	"testing"

	"github.com/cdnapi/cdnapi/api"
)

// TestDocsCoverContract: every path, operation, parameter, header, error
// code, response, schema and example of the OpenAPI document appears on the
// generated page.
func TestDocsCoverContract(t *testing.T) {
	p, err := Docs(api.JSON())
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
	docs, err := Docs(api.JSON())
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
		{"/", Index().Body, 10 << 10},
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
