package api_test

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/api"
)

// document returns the embedded document as decoded JSON.
func document(t *testing.T) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(api.JSON(), &doc); err != nil {
		t.Fatalf("JSON() is not JSON: %v", err)
	}
	return doc
}

// at walks doc along keys and fails t if a key is missing.
func at(t *testing.T, doc any, keys ...string) any {
	t.Helper()
	v := doc
	for i, k := range keys {
		m, ok := v.(map[string]any)
		if !ok || m[k] == nil {
			t.Fatalf("the document has no /%s", strings.Join(keys[:i+1], "/"))
		}
		v = m[k]
	}
	return v
}

// strs returns the strings of a JSON array.
func strs(t *testing.T, v any) []string {
	t.Helper()
	var out []string
	for _, e := range v.([]any) {
		out = append(out, e.(string))
	}
	return out
}

func TestJSON(t *testing.T) {
	if len(api.YAML()) == 0 {
		t.Fatal("YAML() is empty")
	}
	if !json.Valid(api.JSON()) {
		t.Fatal("JSON() is not valid JSON")
	}
	if !bytes.Equal(api.JSON(), api.JSON()) {
		t.Error("JSON() is not stable")
	}
	doc := document(t)
	if v, _ := doc["openapi"].(string); !strings.HasPrefix(v, "3.1.") {
		t.Errorf("openapi is %q, want 3.1.x", v)
	}
}

// TestPaths checks the routes of the contract: every endpoint under /api/v1,
// with GET, HEAD and OPTIONS, on the address API.md puts it on.
func TestPaths(t *testing.T) {
	doc := document(t)
	want := map[string][]string{ // path → its server variables
		"/api/v1/files":                 {"base_url"},
		"/api/v1/status":                {"base_url"},
		"/api/v1/status/incidents":      {"base_url"},
		"/api/v1/status/uptime":         {"base_url"},
		"/api/v1/status/incidents.atom": {"base_url"},
		"/api/v1/status/stream":         {"base_url"},
		"/api/v1/regions":               {"edge_url"},
		"/api/v1/assets":                {"edge_url"},
		"/api/v1/openapi.json":          {"base_url", "edge_url"},
	}
	paths := at(t, doc, "paths").(map[string]any)
	if len(paths) != len(want) {
		t.Errorf("the document has %d paths, want %d", len(paths), len(want))
	}
	top := serverVariables(t, at(t, doc, "servers"))
	for path, servers := range want {
		item := at(t, doc, "paths", path).(map[string]any)
		for _, method := range []string{"get", "head", "options"} {
			at(t, item, method, "responses")
		}
		for _, method := range []string{"post", "put", "patch", "delete"} {
			if item[method] != nil {
				t.Errorf("%s has a %s operation", path, method)
			}
		}
		got := top
		if item["servers"] != nil {
			got = serverVariables(t, item["servers"])
		}
		if !slices.Equal(got, servers) {
			t.Errorf("%s is served on %v, want %v", path, got, servers)
		}
	}
}

// serverVariables returns the one variable of each server of a servers list.
func serverVariables(t *testing.T, servers any) []string {
	t.Helper()
	var names []string
	for _, s := range servers.([]any) {
		vars := at(t, s, "variables").(map[string]any)
		for name := range vars {
			names = append(names, name)
			if url := at(t, s, "url"); url != "{"+name+"}" {
				t.Errorf("server url is %v, want {%s}", url, name)
			}
		}
	}
	return names
}

// TestAgreesWithDomain checks that the document and the root package say
// the same: a value added to one but not the other fails here, not in
// production.
func TestAgreesWithDomain(t *testing.T) {
	doc := document(t)
	schemas := at(t, doc, "components", "schemas")

	var cache []string
	for _, c := range cdnapi.CacheStatuses {
		cache = append(cache, string(c))
	}
	if got := strs(t, at(t, schemas, "CacheStatus", "enum")); !slices.Equal(got, cache) {
		t.Errorf("CacheStatus enum is %v, want %v", got, cache)
	}

	var statuses []string
	for _, s := range cdnapi.Statuses {
		statuses = append(statuses, string(s))
	}
	if got := strs(t, at(t, schemas, "StatusValue", "enum")); !sameSet(got, statuses) {
		t.Errorf("StatusValue enum is %v, want %v", got, statuses)
	}

	if got := strs(t, at(t, schemas, "Component", "properties", "name", "enum")); !slices.Equal(got, cdnapi.Components) {
		t.Errorf("Component name enum is %v, want %v", got, cdnapi.Components)
	}
	for i, item := range at(t, schemas, "StatusDocument", "properties", "components", "prefixItems").([]any) {
		if got := at(t, item, "properties", "name", "const"); got != cdnapi.Components[i] {
			t.Errorf("component %d is %v, want %s", i, got, cdnapi.Components[i])
		}
	}
	if got := at(t, schemas, "StatusDocument", "properties", "version", "const"); got != cdnapi.Version {
		t.Errorf("version is %v, want %s", got, cdnapi.Version)
	}

	codes := []string{
		cdnapi.CodeParameterInvalid, cdnapi.CodeParameterUnknown, cdnapi.CodeCursorInvalid, cdnapi.CodeRegionUnknown,
		cdnapi.CodeAuthenticationRequired, cdnapi.CodeAPIKeyInvalid, cdnapi.CodePermissionDenied, cdnapi.CodeNotFound,
		cdnapi.CodeMethodNotAllowed,
		cdnapi.CodeRateLimited, cdnapi.CodeInternal, cdnapi.CodeStorageUnavailable,
	}
	// Each status has its own error schema (a whole object, not an allOf
	// of a shared one, which generators reduce to its first part); together
	// they name every code once.
	var got []string
	for _, name := range []string{"BadRequestError", "UnauthorizedError", "ForbiddenError", "NotFoundError", "MethodNotAllowedError",
		"TooManyRequestsError", "InternalServerError", "ServiceUnavailableError"} {
		got = append(got, strs(t, at(t, schemas, name, "properties", "error", "properties", "code", "enum"))...)
	}
	if !sameSet(got, codes) {
		t.Errorf("the error schemas' codes are %v, want %v", got, codes)
	}

	// The webhooks' type enums together name every event type once.
	var types []string
	for _, hook := range []string{"statusEvent", "fileQuarantined"} {
		types = append(types, strs(t, at(t, doc, "webhooks", hook, "post", "requestBody", "content", "application/json",
			"schema", "properties", "type", "enum"))...)
	}
	var eventTypes []string
	for _, e := range cdnapi.EventTypes {
		eventTypes = append(eventTypes, string(e))
	}
	if !sameSet(types, eventTypes) || len(types) != len(eventTypes) {
		t.Errorf("the webhooks' event types are %v, want %v", types, eventTypes)
	}

	limit := at(t, doc, "components", "parameters", "limit", "schema")
	for key, want := range map[string]int{"default": cdnapi.DefaultLimit, "minimum": 1, "maximum": cdnapi.MaxLimit} {
		if got := at(t, limit, key); got != float64(want) {
			t.Errorf("limit %s is %v, want %d", key, got, want)
		}
	}
	for _, list := range []string{"FileList", "AssetList"} {
		if got := at(t, schemas, list, "properties", "data", "maxItems"); got != float64(cdnapi.MaxLimit) {
			t.Errorf("%s data maxItems is %v, want %d", list, got, cdnapi.MaxLimit)
		}
	}
}

// TestPatternsAgreeWithDomain checks the document's patterns against the
// root package's validators on the same inputs.
func TestPatternsAgreeWithDomain(t *testing.T) {
	doc := document(t)
	schemas := at(t, doc, "components", "schemas")
	pattern := func(keys ...string) *regexp.Regexp {
		return regexp.MustCompile(at(t, schemas, append(keys, "pattern")...).(string))
	}
	// The fileQuarantined webhook's body, and the quarantine in its data.
	quarantineBody := func(keys ...string) *regexp.Regexp {
		body := at(t, doc, "webhooks", "fileQuarantined", "post", "requestBody", "content", "application/json", "schema", "properties")
		return regexp.MustCompile(at(t, body, append(keys, "pattern")...).(string))
	}
	quarantine := func(field string) *regexp.Regexp { return quarantineBody("data", "properties", field) }
	tests := []struct {
		name    string
		pattern *regexp.Regexp
		valid   func(string) bool
		inputs  []string
	}{
		{"file id", pattern("File", "properties", "id"), func(s string) bool { return cdnapi.ValidID(cdnapi.FileIDPrefix, s) },
			[]string{"fil_a", "fil_", "fil_" + strings.Repeat("Z", 64), "fil_" + strings.Repeat("Z", 65), "fil_a-b", "ast_a", "xfil_a", "fil_é"}},
		{"asset id", pattern("Asset", "properties", "id"), func(s string) bool { return cdnapi.ValidID(cdnapi.AssetIDPrefix, s) },
			[]string{"ast_9", "ast_", "ast_" + strings.Repeat("9", 64), "ast_" + strings.Repeat("9", 65), "fil_9", "ast_9 "}},
		{"region code", pattern("RegionCode"), cdnapi.ValidRegionCode,
			[]string{"FRA1", "fra1", "FRA", "FRA12", "FR1A", "ÄRA1", "FRA1\n"}},
		{"timestamp", pattern("Timestamp"), func(s string) bool {
			tm, err := time.Parse(cdnapi.TimeLayout, s)
			return err == nil && cdnapi.Timestamp(tm) == s
		}, []string{"2026-11-20T14:03:07Z", "2026-11-20T14:03:07.5Z", "2026-11-20T14:03:07+00:00", "2026-11-20 14:03:07Z", "2026-11-20T14:03:07z"}},
		{"project", quarantine("project"), cdnapi.ValidProject,
			[]string{"acme", "a", "A.b_c-d", "-acme", ".acme", "", strings.Repeat("a", 64), strings.Repeat("a", 65), "ac me", "acmé"}},
		{"checksum", quarantine("checksum"), cdnapi.ValidChecksum,
			[]string{"sha256:" + strings.Repeat("0f", 32), "sha256:" + strings.Repeat("0F", 32), "sha256:" + strings.Repeat("0f", 31),
				"sha1:" + strings.Repeat("0f", 32), strings.Repeat("0f", 32)}},
		{"event id", quarantineBody("id"), cdnapi.ValidEventID,
			[]string{"evt_" + strings.Repeat("a1", 16), "evt_" + strings.Repeat("A1", 16), "evt_" + strings.Repeat("a1", 15), "evt_", "wh_" + strings.Repeat("a1", 16)}},
	}
	for _, tt := range tests {
		for _, in := range tt.inputs {
			if got, want := tt.pattern.MatchString(in), tt.valid(in); got != want {
				t.Errorf("%s: the pattern %s says %t for %q, the domain says %t", tt.name, tt.pattern, got, in, want)
			}
		}
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestIngestDocument checks the ingest address's document against the
// codes its handler answers and the fields of a batch's answer.
func TestIngestDocument(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal(api.IngestJSON(), &doc); err != nil {
		t.Fatalf("IngestJSON() is not JSON: %v", err)
	}
	if at(t, doc, "openapi") != "3.1.0" {
		t.Error("the ingest document is not OpenAPI 3.1.0")
	}
	schemas := at(t, doc, "components", "schemas")
	codes := []string{
		cdnapi.CodeParameterInvalid, cdnapi.CodeAuthenticationRequired, cdnapi.CodeAPIKeyInvalid,
		cdnapi.CodePermissionDenied, cdnapi.CodeNotFound, cdnapi.CodeMethodNotAllowed, cdnapi.CodeBodyTooLarge,
		cdnapi.CodeEncodingUnsupported, cdnapi.CodeRateLimited, cdnapi.CodeInternal, cdnapi.CodeStorageUnavailable,
		cdnapi.CodeBodyIncomplete,
	}
	if got := strs(t, at(t, schemas, "Error", "properties", "error", "properties", "code", "enum")); !sameSet(got, codes) {
		t.Errorf("the ingest document's error codes are %v, want %v", got, codes)
	}
	if got := strs(t, at(t, schemas, "LogLine", "properties", "upstream_cache_status", "enum")); len(got) != 8 || got[0] != "" {
		t.Errorf("LogLine's upstream_cache_status is %v, want nginx's 7 values and empty", got)
	}
	at(t, doc, "paths", "/api/v1/edge-logs", "post")
}
