package httpapi

import "testing"

// TestCleanPath checks the canonical form of paths, which must be ServeMux's.
func TestCleanPath(t *testing.T) {
	for in, want := range map[string]string{
		"":                "/",
		"/":               "/",
		"//":              "/",
		"/a":              "/a",
		"/a/":             "/a/",
		"/a//":            "/a/",
		"/a//b":           "/a/b",
		"/a/./b":          "/a/b",
		"/a/../b":         "/b",
		"/..":             "/",
		"/api/v1/files":   "/api/v1/files",
		"/api/v1/files/.": "/api/v1/files",
	} {
		if got := cleanPath(in); got != want {
			t.Errorf("cleanPath(%q) = %q, want %q", in, got, want)
		}
	}
}
