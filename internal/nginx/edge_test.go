package nginx_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi/internal/nginx"
	"github.com/cdnapi/cdnapi/internal/nginxtest"
)

// client never reuses connections, so a stopped server's refusal shows at
// once, and has a bound on every request.
var client = &http.Client{
	Timeout:   5 * time.Second,
	Transport: &http.Transport{DisableKeepAlives: true},
}

// logLine is a line of the cdnapi log format, every field required.
type logLine struct {
	RequestID           *string      `json:"request_id"`
	Msec                *json.Number `json:"msec"`
	Region              *string      `json:"region"`
	RequestMethod       *string      `json:"request_method"`
	URI                 *string      `json:"uri"`
	Status              *int         `json:"status"`
	BodyBytesSent       *int64       `json:"body_bytes_sent"`
	UpstreamCacheStatus *string      `json:"upstream_cache_status"`
}

// files of the origin: name on disk (and decoded path), its bytes.
var files = map[string][]byte{
	"app.js":                  bytes.Repeat([]byte("console.log(1);\n"), 1000),
	"empty.txt":               {},
	"with space.txt":          []byte("a file whose name has a space\n"),
	"größe-日本.txt":            []byte("UTF-8 in the path\n"),
	`say "hi".txt`:            []byte("a quote in the path\n"),
	`back\slash.txt`:          []byte("a backslash in the path\n"),
	"img/logo.png":            bytes.Repeat([]byte{0x89, 'P', 'N', 'G', 0, 0xff}, 5000),
	"deep/a/b/c/d/index.html": []byte("<!doctype html><title>x</title>\n"),
}

// escapedPath returns name as a request path, every byte outside the
// unreserved characters and "/" percent-encoded, as a careful client sends it.
func escapedPath(name string) string {
	var b strings.Builder
	b.WriteByte('/')
	for _, c := range []byte(name) {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~/", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// originDir writes files into a new directory.
func originDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// startEdge starts an origin over files and an edge in region FRA1 in front.
func startEdge(t *testing.T) (origin, edge *nginx.Server) {
	t.Helper()
	origin = nginxtest.StartOrigin(t, originDir(t))
	edge = nginxtest.StartEdge(t, nginx.Edge{Region: "FRA1", Origin: origin.URL()})
	return origin, edge
}

// get GETs u and returns the answer with its body read.
func get(t *testing.T, u string) (*http.Response, []byte) {
	t.Helper()
	res, err := client.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	return res, body
}

// waitLog waits until the access log at path has n lines, and returns them
// (readLog). nginx writes a request's line after the answer's last byte, so a
// client can have its answer before the line is written.
func waitLog(t *testing.T, path string, n int) []logLine {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		if c := bytes.Count(b, []byte("\n")); c >= n || time.Now().After(deadline) {
			if c > n {
				t.Errorf("%s: %d lines, want %d", path, c, n)
			}
			return readLog(t, path)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// readLog returns the lines of an access log, each checked to be one JSON
// object with exactly the fields of the cdnapi format.
func readLog(t *testing.T, path string) []logLine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []logLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		raw := sc.Bytes()
		if !json.Valid(raw) {
			t.Fatalf("%s: not JSON: %s", path, raw)
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(raw, &fields); err != nil {
			t.Fatalf("%s: %v: %s", path, err, raw)
		}
		var l logLine
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		dec.UseNumber()
		if err := dec.Decode(&l); err != nil {
			t.Fatalf("%s: %v: %s", path, err, raw)
		}
		if len(fields) != 8 || l.RequestID == nil || l.Msec == nil || l.Region == nil || l.RequestMethod == nil ||
			l.URI == nil || l.Status == nil || l.BodyBytesSent == nil || l.UpstreamCacheStatus == nil {
			t.Fatalf("%s: want exactly the 8 fields of the cdnapi format: %s", path, raw)
		}
		lines = append(lines, l)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

var requestID = regexp.MustCompile(`^[0-9a-f]{32}$`)

// TestEdgeCachesAndLogs: the first GET of a path is a MISS, the second a HIT
// with the same body, and each is one line of the cdnapi format.
func TestEdgeCachesAndLogs(t *testing.T) {
	t.Parallel()
	_, edge := startEdge(t)
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range files {
			if !yield(n) {
				return
			}
		}
	})
	start := float64(time.Now().Add(-time.Second).UnixMilli()) / 1000
	var ids []string
	for _, name := range names {
		path := escapedPath(name)
		var first []byte
		for i, want := range []string{"MISS", "HIT"} {
			res, body := get(t, edge.URL()+path)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("GET %s #%d: %s", path, i+1, res.Status)
			}
			if got := res.Header.Get("X-Cache-Status"); got != want {
				t.Errorf("GET %s #%d: X-Cache-Status %q, want %q", path, i+1, got, want)
			}
			id := res.Header.Get("X-Request-Id")
			if !requestID.MatchString(id) {
				t.Errorf("GET %s #%d: X-Request-Id %q, want 32 lower-case hex", path, i+1, id)
			}
			ids = append(ids, id)
			if !bytes.Equal(body, files[name]) {
				t.Errorf("GET %s #%d: %d bytes, not the file's %d", path, i+1, len(body), len(files[name]))
			}
			if i == 0 {
				first = body
			} else if !bytes.Equal(body, first) {
				t.Errorf("GET %s: the HIT's body differs from the MISS's", path)
			}
		}
	}
	end := float64(time.Now().Add(time.Second).UnixMilli()) / 1000

	lines := waitLog(t, edge.LogPath(), 2*len(names))
	if len(lines) != 2*len(names) {
		t.Fatalf("%d log lines, want %d (two per path)", len(lines), 2*len(names))
	}
	for i, l := range lines {
		name := names[i/2]
		wantCache := []string{"MISS", "HIT"}[i%2]
		if *l.RequestID != ids[i] {
			t.Errorf("line %d: request_id %q, want the X-Request-Id %q", i+1, *l.RequestID, ids[i])
		}
		msec, err := l.Msec.Float64()
		if err != nil || msec < start || msec > end || !strings.Contains(l.Msec.String(), ".") {
			t.Errorf("line %d: msec %s, want seconds with milliseconds between %.3f and %.3f", i+1, l.Msec, start, end)
		}
		if *l.Region != "FRA1" || *l.RequestMethod != "GET" || *l.Status != 200 {
			t.Errorf("line %d: region %q, method %q, status %d; want FRA1, GET, 200", i+1, *l.Region, *l.RequestMethod, *l.Status)
		}
		if *l.URI != "/"+name {
			t.Errorf("line %d: uri %q, want %q (decoded)", i+1, *l.URI, "/"+name)
		}
		if *l.BodyBytesSent != int64(len(files[name])) {
			t.Errorf("line %d (%s): body_bytes_sent %d, want the file's %d", i+1, name, *l.BodyBytesSent, len(files[name]))
		}
		if *l.UpstreamCacheStatus != wantCache {
			t.Errorf("line %d (%s): upstream_cache_status %q, want %q", i+1, name, *l.UpstreamCacheStatus, wantCache)
		}
	}
	if seen := slices.Compact(slices.Sorted(slices.Values(ids))); len(seen) != len(ids) {
		t.Errorf("request ids repeat: %d distinct of %d", len(seen), len(ids))
	}
}

// TestEdgeLogsOddRequests: answers other than 200, methods other than GET
// and paths that are not UTF-8 still make lines of valid JSON.
func TestEdgeLogsOddRequests(t *testing.T) {
	t.Parallel()
	_, edge := startEdge(t)
	cases := []struct {
		method, path       string
		wantStatus         int
		wantURI, wantCache string
	}{
		{"GET", "/missing.txt", 404, "/missing.txt", "MISS"},
		{"HEAD", "/app.js", 200, "/app.js", "MISS"},
		{"GET", "/app.js?v=1&token=secret", 200, "/app.js", "MISS"}, // another cache key; the query is not logged
		{"GET", "/ctl%01%1f%7f.txt", 404, "/ctl\x01\x1f\x7f.txt", "MISS"},
		// $uri is normalised; the cache key is the raw $request_uri.
		{"GET", "/a/../app.js", 200, "/app.js", "MISS"},
		// Not UTF-8 once decoded: the byte is logged as it is, so the line
		// is JSON that a strict UTF-8 reader must repair (Go: U+FFFD).
		{"GET", "/bad%FF.txt", 404, "/bad\uFFFD.txt", "MISS"},
	}
	for _, c := range cases {
		req, err := http.NewRequest(c.method, edge.URL()+c.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.URL.Opaque = c.path // sent as written, not cleaned by net/url
		res, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", c.method, c.path, err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != c.wantStatus {
			t.Errorf("%s %s: %s, want %d", c.method, c.path, res.Status, c.wantStatus)
		}
	}
	lines := waitLog(t, edge.LogPath(), len(cases))
	if len(lines) != len(cases) {
		t.Fatalf("%d log lines, want %d", len(lines), len(cases))
	}
	for i, c := range cases {
		l := lines[i]
		if *l.RequestMethod != c.method || *l.Status != c.wantStatus || *l.URI != c.wantURI || *l.UpstreamCacheStatus != c.wantCache {
			t.Errorf("%s %s: logged %s %q %d %s; want %s %q %d %s", c.method, c.path,
				*l.RequestMethod, *l.URI, *l.Status, *l.UpstreamCacheStatus, c.method, c.wantURI, c.wantStatus, c.wantCache)
		}
	}
	if *lines[1].BodyBytesSent != 0 {
		t.Errorf("HEAD: body_bytes_sent %d, want 0", *lines[1].BodyBytesSent)
	}
}

// TestHealthIsNotLogged: /health answers 200 "ok" and writes no line.
func TestHealthIsNotLogged(t *testing.T) {
	t.Parallel()
	_, edge := startEdge(t)
	for range 3 {
		res, body := get(t, edge.HealthURL())
		if res.StatusCode != http.StatusOK || string(body) != "ok\n" {
			t.Fatalf("GET %s: %s %q, want 200 \"ok\\n\"", edge.HealthURL(), res.Status, body)
		}
		if !requestID.MatchString(res.Header.Get("X-Request-Id")) {
			t.Errorf("GET /health: X-Request-Id %q", res.Header.Get("X-Request-Id"))
		}
	}
	get(t, edge.URL()+"/app.js")
	if lines := waitLog(t, edge.LogPath(), 1); len(lines) != 1 || *lines[0].URI != "/app.js" {
		t.Errorf("log after 3 health checks and GET /app.js: %d lines, want only /app.js's", len(lines))
	}
}

// TestReopen: after the log is renamed and the edge reopens its logs (what
// logrotate does), new lines go to a new file at the log's path, and none to
// the renamed one.
func TestReopen(t *testing.T) {
	t.Parallel()
	_, edge := startEdge(t)
	get(t, edge.URL()+"/app.js")
	waitLog(t, edge.LogPath(), 1)
	rotated := edge.LogPath() + ".1"
	if err := os.Rename(edge.LogPath(), rotated); err != nil {
		t.Fatal(err)
	}
	get(t, edge.URL()+"/app.js") // before the reopen: still the renamed file
	waitLog(t, rotated, 2)
	if err := edge.Reopen(); err != nil {
		t.Fatal(err)
	}
	get(t, edge.URL()+"/empty.txt")
	get(t, edge.URL()+"/app.js")
	cur := waitLog(t, edge.LogPath(), 2)
	old := readLog(t, rotated)
	if len(old) != 2 || len(cur) != 2 {
		t.Fatalf("renamed log %d lines, new log %d; want 2 and 2", len(old), len(cur))
	}
	if *cur[0].URI != "/empty.txt" || *cur[1].UpstreamCacheStatus != "HIT" {
		t.Errorf("new log: %s %s, %s %s", *cur[0].URI, *cur[0].UpstreamCacheStatus, *cur[1].URI, *cur[1].UpstreamCacheStatus)
	}
}

// TestStopKillRestart: a stopped or killed edge refuses connections, and
// comes back on the same port with its cache.
func TestStopKillRestart(t *testing.T) {
	t.Parallel()
	_, edge := startEdge(t)
	if res, _ := get(t, edge.URL()+"/app.js"); res.Header.Get("X-Cache-Status") != "MISS" {
		t.Fatalf("first GET: %s", res.Header.Get("X-Cache-Status"))
	}
	for _, c := range []struct {
		name string
		stop func() error
	}{
		{"Stop", edge.Stop},
		{"Kill", edge.Kill},
	} {
		if err := c.stop(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if edge.Running() {
			t.Errorf("after %s: Running", c.name)
		}
		_, err := client.Get(edge.HealthURL())
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("after %s: GET /health: %v, want connection refused", c.name, err)
		}
		if err := edge.Restart(); err != nil {
			t.Fatalf("Restart after %s: %v", c.name, err)
		}
		if res, _ := get(t, edge.HealthURL()); res.StatusCode != http.StatusOK {
			t.Errorf("after %s and Restart: /health %s", c.name, res.Status)
		}
		// The cache is on disk: a restarted edge still has the object.
		if res, _ := get(t, edge.URL()+"/app.js"); res.Header.Get("X-Cache-Status") != "HIT" {
			t.Errorf("after %s and Restart: X-Cache-Status %q, want HIT", c.name, res.Header.Get("X-Cache-Status"))
		}
	}
	if err := edge.Start(); err == nil {
		t.Error("Start of a running edge: no error")
	}
}

// TestOriginServesFiles: the origin answers a file with its bytes and the
// validators an edge revalidates with, and 404 for a missing one.
func TestOriginServesFiles(t *testing.T) {
	t.Parallel()
	origin := nginxtest.StartOrigin(t, originDir(t))
	res, body := get(t, origin.URL()+"/img/logo.png")
	if res.StatusCode != 200 || !bytes.Equal(body, files["img/logo.png"]) {
		t.Errorf("GET /img/logo.png: %s, %d bytes", res.Status, len(body))
	}
	if res.Header.Get("ETag") == "" || res.Header.Get("Last-Modified") == "" || res.Header.Get("Content-Type") != "image/png" {
		t.Errorf("GET /img/logo.png: ETag %q, Last-Modified %q, Content-Type %q", res.Header.Get("ETag"), res.Header.Get("Last-Modified"), res.Header.Get("Content-Type"))
	}
	if res, _ := get(t, origin.URL()+"/nope"); res.StatusCode != 404 {
		t.Errorf("GET /nope: %s", res.Status)
	}
	if origin.LogPath() != "" {
		t.Errorf("origin LogPath %q, want none", origin.LogPath())
	}
}
