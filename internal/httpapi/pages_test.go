package httpapi

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestPages checks the human pages. They are outside the OpenAPI document,
// which describes the JSON API only, so the contract validator does not
// apply; their headers are checked here instead.
func TestPages(t *testing.T) {
	e := newEnv(t, nil)
	for _, path := range []string{"/", "/docs", "/?utm_source=x"} {
		t.Run(path, func(t *testing.T) {
			res, err := e.client.Get(e.apiURL + path)
			must(t, err)
			body, err := io.ReadAll(res.Body)
			res.Body.Close()
			must(t, err)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status %d", res.StatusCode)
			}
			for name, want := range map[string]string{
				"Content-Type":            "text/html; charset=utf-8",
				"Content-Security-Policy": pageCSP,
				"X-Content-Type-Options":  "nosniff",
				"Cache-Control":           cachePages,
			} {
				if got := res.Header.Get(name); got != want {
					t.Errorf("%s %q, want %q", name, got, want)
				}
			}
			if res.Header.Get("ETag") == "" || !strings.HasPrefix(res.Header.Get("X-Request-Id"), "req_") {
				t.Errorf("ETag %q, X-Request-Id %q", res.Header.Get("ETag"), res.Header.Get("X-Request-Id"))
			}
			page := string(body)
			for _, want := range []string{"<!doctype html>", "/api/v1/openapi.json", "/api/v1/files", "/api/v1/status", "/api/v1/regions", "/api/v1/assets"} {
				if path != "/docs" && !strings.Contains(page, want) {
					t.Errorf("the page does not mention %s", want)
				}
			}
			// No external resources: nothing the CSP would have to allow.
			for _, banned := range []string{"http://", "https://", "<script", "src="} {
				if strings.Contains(page, banned) {
					t.Errorf("the page contains %q", banned)
				}
			}
		})
	}
	// The page's one style sheet is what the CSP hash allows.
	if !strings.Contains(pageCSP, "style-src 'sha256-") || strings.Contains(pageCSP, "unsafe-inline") {
		t.Errorf("CSP %q", pageCSP)
	}
}
