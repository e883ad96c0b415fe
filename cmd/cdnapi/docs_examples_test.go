package main

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi/internal/apitest"
)

// The example commands /docs shows, in the only forms it writes them.
var (
	curlGet     = regexp.MustCompile(`^curl -s '([^']+)'$`)
	curlStream  = regexp.MustCompile(`^curl -sN '([^']+)'$`)
	curlHead    = regexp.MustCompile(`^curl -sI '([^']+)'$`)
	curlOptions = regexp.MustCompile(`^curl -si -X OPTIONS '([^']+)' -H '(Origin): ([^']+)' -H '(Access-Control-Request-Method): ([A-Z]+)'$`)
	exampleOp   = regexp.MustCompile(`(?s)<article class="op" id="([A-Za-z]+)">(.*?)</article>`)
	exampleReq  = regexp.MustCompile(`(?s)<pre class="ex"><code>(curl [^<]*)</code></pre>\s*<p class="c">answers (\d+) with(?:</p>\s*<pre class="ex"><code>([^<]*)</code></pre>| [^<]*</p>)`)
)

// TestDocsExamplesRun runs every example request of /docs, as the page
// writes it, against the server that serves the page (on its real, random
// port), and checks that the answer is the one shown: the status, and for
// a GET the same fields at every level with the same JSON types (null
// stands for any value of a field that may be null). Each answer is also
// checked against the contract.
func TestDocsExamplesRun(t *testing.T) {
	db := "sqlite:" + t.TempDir() + "/docs.db"
	s := startServe(t, nil, "--db", db, "--demo")
	v := apitest.NewValidator(t)
	// An incident, so that the incidents example is compared with one.
	if err := run(context.Background(), []string{"status", "set", "Upload Service", "under_maintenance", "--until", "1h",
		"--message", "Moving racks.", "--db", db}, getenvFrom(nil), strings.NewReader(""), io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		_, body := get(t, v, s.api+"/api/v1/status/incidents")
		if strings.Contains(string(body), "Moving racks.") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the incident was not recorded within 10s")
		}
		time.Sleep(100 * time.Millisecond)
	}

	res, err := http.Get(s.api + "/docs")
	if err != nil {
		t.Fatal(err)
	}
	page, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("/docs: %d, %v", res.StatusCode, err)
	}
	ops := exampleOp.FindAllSubmatch(page, -1)
	if len(ops) < 7 {
		t.Fatalf("/docs has %d operations", len(ops))
	}
	ran := 0
	for _, op := range ops {
		id := string(op[1])
		examples := exampleReq.FindAllSubmatch(op[2], -1)
		if len(examples) != 3 {
			t.Errorf("%s: %d examples, want GET, HEAD and OPTIONS", id, len(examples))
		}
		for _, ex := range examples {
			cmd, status, shown := html.UnescapeString(string(ex[1])), string(ex[2]), html.UnescapeString(string(ex[3]))
			var req *http.Request
			var err error
			if m := curlStream.FindStringSubmatch(cmd); m != nil {
				runStreamExample(t, cmd, m[1], shown)
				ran++
				continue
			}
			switch m := [][]string{curlGet.FindStringSubmatch(cmd), curlHead.FindStringSubmatch(cmd),
				curlOptions.FindStringSubmatch(cmd)}; {
			case m[0] != nil:
				req, err = http.NewRequest(http.MethodGet, m[0][1], nil)
			case m[1] != nil:
				req, err = http.NewRequest(http.MethodHead, m[1][1], nil)
			case m[2] != nil:
				req, err = http.NewRequest(http.MethodOptions, m[2][1], nil)
				if err == nil {
					req.Header.Set(m[2][2], m[2][3])
					req.Header.Set(m[2][4], m[2][5])
				}
			default:
				t.Errorf("%s: an example in no known form: %s", id, cmd)
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(req.URL.String(), s.api+"/") && !strings.HasPrefix(req.URL.String(), s.edge+"/") {
				t.Errorf("%s: %s is on neither address of the server (%s, %s)", id, cmd, s.api, s.edge)
				continue
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("%s: %v", cmd, err)
			}
			body, err := io.ReadAll(res.Body)
			res.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			v.Check(t, req, res, body)
			ran++
			if got := fmt.Sprint(res.StatusCode); got != status {
				t.Errorf("%s: answered %s, the page shows %s", cmd, got, status)
			}
			if shown == "" {
				if len(body) != 0 {
					t.Errorf("%s: the page shows no body, the answer has %d bytes", cmd, len(body))
				}
				continue
			}
			if strings.HasPrefix(res.Header.Get("Content-Type"), "application/atom+xml") {
				// The feed: the example shows its start, as the answer has it.
				// Its links are absolute: the example's are those of a
				// deployment at https://status.example.com, this server's
				// of the address it was asked at.
				head, _, _ := strings.Cut(shown, "<updated>")
				head = strings.ReplaceAll(head, "https://status.example.com", s.api)
				if !strings.HasPrefix(string(body), head) {
					t.Errorf("%s: the feed begins %.200q, the page shows %.200q", cmd, body, head)
				}
				continue
			}
			var want, got any
			if err := json.Unmarshal([]byte(shown), &want); err != nil {
				t.Errorf("%s: the example answer is not JSON: %v", id, err)
				continue
			}
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatalf("%s: %v", cmd, err)
			}
			// The OpenAPI document's example shows three of its members;
			// its schema leaves the others open.
			open := id == "getOpenAPIDocument"
			for _, p := range shapeDiff("", want, got, open) {
				t.Errorf("%s: %s", cmd, p)
			}
		}
	}
	t.Logf("ran %d example requests", ran)
}

// shapeDiff returns where got does not have the shape of want: a field
// missing or of another JSON type, or, unless open, a field want does not
// have. A null on either side matches any value, and an empty object any
// object (the example of a member the schema does not describe). Every item of an array is
// compared with want's item at the same place, or its last.
func shapeDiff(at string, want, got any, open bool) []string {
	if want == nil || got == nil {
		return nil
	}
	if fmt.Sprintf("%T", want) != fmt.Sprintf("%T", got) {
		return []string{fmt.Sprintf("%s is %T in the answer, %T in the example", at, got, want)}
	}
	var out []string
	switch w := want.(type) {
	case map[string]any:
		g := got.(map[string]any)
		if len(w) == 0 {
			return nil
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok {
				out = append(out, fmt.Sprintf("%s.%s is in the example, not in the answer", at, k))
				continue
			}
			out = append(out, shapeDiff(at+"."+k, wv, gv, false)...)
		}
		for k := range g {
			if _, ok := w[k]; !ok && !open {
				out = append(out, fmt.Sprintf("%s.%s is in the answer, not in the example", at, k))
			}
		}
	case []any:
		for i, gv := range got.([]any) {
			if len(w) > 0 {
				out = append(out, shapeDiff(fmt.Sprintf("%s[%d]", at, i), w[min(i, len(w)-1)], gv, false)...)
			}
		}
	}
	return out
}

// TestBaseURL: the pages name a bound address as people reach it; a
// wildcard host, which no one can connect to, by the machine's name.
func TestBaseURL(t *testing.T) {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	for addr, want := range map[string]string{
		"127.0.0.1:18080": "http://127.0.0.1:18080",
		"[::1]:18081":     "http://[::1]:18081",
		"0.0.0.0:8080":    "http://" + net.JoinHostPort(host, "8080"),
		"[::]:8081":       "http://" + net.JoinHostPort(host, "8081"),
	} {
		a, err := net.ResolveTCPAddr("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := baseURL(a); got != want {
			t.Errorf("baseURL(%s) = %s, want %s", addr, got, want)
		}
	}
}

// runStreamExample runs the example of the status stream, which never
// ends: it reads the answer until its first event, then hangs up, and
// checks that the stream begins as the page shows it.
func runStreamExample(t *testing.T, cmd, url, shown string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	defer res.Body.Close()
	var got []byte
	buf := make([]byte, 4096)
	for !strings.Contains(string(got), "\ndata: ") || !strings.HasSuffix(string(got), "\n\n") {
		n, err := res.Body.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			t.Fatalf("%s: %v after %q", cmd, err, got)
		}
	}
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Errorf("%s: %d %q, want 200 text/event-stream", cmd, res.StatusCode, res.Header.Get("Content-Type"))
	}
	first, _, _ := strings.Cut(shown, "\n\n")
	if !strings.HasPrefix(string(got), first+"\n\n") || !strings.Contains(string(got), "\nevent: status\ndata: {") {
		t.Errorf("%s: the stream begins %q, the page shows %q", cmd, got, shown)
	}
}
