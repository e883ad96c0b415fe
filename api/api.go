// Package api holds the OpenAPI 3.1 document of the cdnapi read API: the
// contract that the service serves at /api/v1/openapi.json and that the tests
// check every response against. The document is written in YAML, embedded in
// the binary, and converted to JSON once, when the package is initialised, so
// that serving it can never fail.
package api

import (
	_ "embed"
	"fmt"

	"sigs.k8s.io/yaml"
)

//go:embed openapi.yaml
var docYAML []byte

//go:embed ingest.yaml
var ingestYAML []byte

// ingestJSON is the ingest address's own document (serve --ingest-addr),
// converted at init as docJSON is.
var ingestJSON = mustJSON(ingestYAML)

// IngestJSON returns the OpenAPI document of the ingest address, where
// edges send their log lines, as compact JSON. The caller must not modify
// the returned slice.
func IngestJSON() []byte { return ingestJSON }

// docJSON is converted at init rather than on first use: a broken document
// then stops the program (and every test) at start, never a request.
var docJSON = mustJSON(docYAML)

// YAML returns the OpenAPI document as written. The caller must not modify
// the returned slice.
func YAML() []byte { return docYAML }

// JSON returns the OpenAPI document as compact JSON, the form served at
// /api/v1/openapi.json. The caller must not modify the returned slice.
func JSON() []byte { return docJSON }

func mustJSON(y []byte) []byte {
	j, err := yaml.YAMLToJSON(y)
	if err != nil {
		panic(fmt.Sprintf("api: the embedded openapi.yaml does not convert to JSON: %v", err))
	}
	return j
}
