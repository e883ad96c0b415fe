package httpapi

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/cdnapi/cdnapi/internal/ratelimit"
)

// The tests of this file are those of issue 19: what a hostile client
// tried, each failing before the change it checks.

// TestNoKeyInLogs sends a valid key, and a made-up one, in every place a
// client could put it, and checks that no log line shows either.
func TestNoKeyInLogs(t *testing.T) {
	e, k := newGuardedEnv(t, true, ratelimit.Policy{}, "")
	guess := "cdk_" + strings.Repeat("G", 32)
	for _, key := range []string{k.def, guess} {
		esc := url.QueryEscape(key)
		for _, target := range []string{
			"/api/v1/files?limit=3&access_token=" + esc,
			"/api/v1/files?key=" + esc,
			"/api/v1/files?api_key=" + esc + "&limit=2",
			"/api/v1/files?whatever=" + esc,
			"/api/v1/files?" + esc,
			"/api/v1/files?limit=" + esc,
			"/api/v1/files?cursor=" + esc,
			"/api/v1/files?token=" + strings.ReplaceAll(esc, "_", "%5F"),
			"/api/v1/files/" + esc,
			"/api/v1/status?key=" + esc,
		} {
			e.do(t, onAPI, http.MethodGet, target, nil)
		}
		e.do(t, onAPI, http.MethodGet, "/api/v1/files", hdr("User-Agent", "curl "+key, "Authorization", "Bearer "+key))
		e.do(t, onAPI, http.MethodGet, "/api/v1/files", hdr("X-Request-Id", key))
		e.do(t, onEdge, http.MethodGet, "/api/v1/regions", hdr("X-Api-Key", key, "Authorization", "Bearer "+key))
	}
	logs := e.logs.String()
	if n := len(e.logLines()); n < 20 {
		t.Fatalf("%d access-log lines", n)
	}
	for _, key := range []string{k.def, guess} {
		if i := strings.Index(logs, key[4:]); i >= 0 {
			t.Errorf("a key reached the log: …%s…", logs[max(0, i-200):min(len(logs), i+50)])
		}
	}
	if !strings.Contains(logs, `"path":"/api/v1/files?limit=3\u0026access_token=xxxxx"`) &&
		!strings.Contains(logs, `"path":"/api/v1/files?limit=3&access_token=xxxxx"`) {
		t.Errorf("the redacted parameter is not in the log:\n%s", logs)
	}
}
