package httpapi

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestRobotsTxt: /robots.txt is text that lets crawlers index the pages
// and keeps them out of /api/, where they would page through the store;
// it is cached like the pages, and HEAD gets its headers.
func TestRobotsTxt(t *testing.T) {
	e := newEnv(t, nil)
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		req, _ := http.NewRequest(method, e.apiURL+"/robots.txt", nil)
		res, err := e.client.Do(req)
		must(t, err)
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		must(t, err)
		if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/plain; charset=utf-8" ||
			res.Header.Get("Cache-Control") != cachePages || res.Header.Get("ETag") == "" {
			t.Errorf("%s /robots.txt: %d, headers %v", method, res.StatusCode, res.Header)
		}
		if method == http.MethodHead {
			continue
		}
		// Parsed as crawlers do: the group of every user agent, its rules.
		var agent string
		rules := map[string][]string{}
		for _, line := range strings.Split(string(body), "\n") {
			line, _, _ = strings.Cut(line, "#")
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			k, v = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(v)
			if k == "user-agent" {
				agent = v
				continue
			}
			rules[agent] = append(rules[agent], k+" "+v)
		}
		if got := strings.Join(rules["*"], ", "); got != "disallow /api/" {
			t.Errorf("rules for *: %q, want disallow /api/ only\n%s", got, body)
		}
	}
}
