package localcdn

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi/internal/clamdtest"
	"github.com/cdnapi/cdnapi/internal/nginx"
	"github.com/cdnapi/cdnapi/internal/nginxtest"
	"github.com/cdnapi/cdnapi/internal/syslogngtest"
)

var client = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// freeAddrs returns addresses for every part, on ports that were free a
// moment ago (held open together, so that none repeats).
func freeAddrs(t *testing.T) Addrs {
	t.Helper()
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	next := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, l)
		return l.Addr().String()
	}
	a := Addrs{Origin: next(), API: next(), Edge: next(), Admin: next(), Upload: next(), UploadAuth: next(), Ingest: next()}
	for range Regions {
		a.Edges = append(a.Edges, next())
		a.Metrics = append(a.Metrics, next())
	}
	return a
}

// get GETs u and returns the answer and its body.
func get(t *testing.T, u string) (*http.Response, []byte) {
	t.Helper()
	res, err := client.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	return res, b
}

// repo returns the checkout, which holds deploy/nginx.
func repo(t *testing.T) string {
	t.Helper()
	r, err := nginx.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestOriginAndEdges runs the nginx half of Up (no cdnapi needed): the
// origin serves the generated files, each edge caches them (MISS, then HIT)
// and logs them as its region, Status says so, and Down stops it all and
// removes the directory.
func TestOriginAndEdges(t *testing.T) {
	nginxtest.Require(t)
	a := freeAddrs(t)
	dir := t.TempDir()
	c := &CDN{Dir: filepath.Join(dir, "cdn"), Repo: repo(t), Origin: a.Origin, statePath: filepath.Join(dir, "state.json")}
	if err := os.Mkdir(c.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Down(io.Discard); err != nil {
			t.Errorf("Down: %v", err)
		}
	})
	ctx := context.Background()
	say := func(format string, args ...any) { t.Logf(format, args...) }
	// What cdnapi uploads promotes, written straight into the origin.
	if _, _, err := writeOrigin(c.originRoot()); err != nil {
		t.Fatal(err)
	}
	if err := c.startOrigin(ctx, a, say); err != nil {
		t.Fatal(err)
	}
	if err := c.startEdges(ctx, a, say); err != nil {
		t.Fatal(err)
	}

	const path = "/static/js/app-001.js" // the README's
	_, want := get(t, "http://"+a.Origin+path)
	if len(want) == 0 {
		t.Fatalf("origin: %s is empty", path)
	}
	for i, e := range c.Edges {
		for _, cache := range []string{"MISS", "HIT"} {
			res, body := get(t, "http://"+a.Edges[i]+path)
			if res.StatusCode != 200 || res.Header.Get("X-Cache-Status") != cache || !bytes.Equal(body, want) {
				t.Errorf("edge %s: %s, X-Cache-Status %q (want %s), %d bytes (want %d)",
					e.Region, res.Status, res.Header.Get("X-Cache-Status"), cache, len(body), len(want))
			}
		}
		var lines []map[string]any
		deadline := time.Now().Add(5 * time.Second)
		for len(lines) < 2 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
			b, _ := os.ReadFile(e.Log)
			lines = lines[:0]
			for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
				var m map[string]any
				if json.Unmarshal(l, &m) == nil {
					lines = append(lines, m)
				}
			}
		}
		if len(lines) != 2 || lines[0]["region"] != e.Region || lines[0]["upstream_cache_status"] != "MISS" ||
			lines[1]["upstream_cache_status"] != "HIT" || lines[1]["uri"] != path {
			t.Errorf("edge %s: log %s: %v", e.Region, e.Log, lines)
		}
	}

	for _, h := range c.Status(ctx) {
		if !h.OK {
			t.Errorf("Status: %s not OK: %s", h.Name, h.Detail)
		}
	}
	if n := len(c.Status(ctx)); n != 1+len(Regions) {
		t.Errorf("Status: %d parts, want %d", n, 1+len(Regions))
	}
	procs := c.Procs
	if err := c.Down(io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, p := range procs {
		if p.Running() {
			t.Errorf("after Down: %s still runs", p.Name)
		}
	}
	if _, err := os.Stat(c.Dir); !os.IsNotExist(err) {
		t.Errorf("after Down: %s: %v, want it removed", c.Dir, err)
	}
	if _, err := client.Get("http://" + a.Edges[0] + "/health"); err == nil {
		t.Error("after Down: an edge still answers")
	}
}

// TestUp brings the whole CDN up on free ports and follows two requests of
// an edge into serve's assets list, the origin's files into the files list,
// and the README's upload through the upload path.
func TestUp(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cdnapi and starts 12 processes")
	}
	nginxtest.Require(t)
	a := freeAddrs(t)
	state := filepath.Join(t.TempDir(), "state.json")
	var log bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := Up(ctx, Options{Repo: repo(t), StatePath: state, Addrs: a, Log: &log})
	if err != nil {
		t.Fatalf("Up: %v\n%s", err, log.String())
	}
	t.Cleanup(func() {
		if err := c.Down(io.Discard); err != nil {
			t.Errorf("Down: %v", err)
		}
	})
	if _, err := Load(state); err != nil {
		t.Fatal(err)
	}
	for _, h := range c.Status(ctx) {
		if !h.OK {
			t.Errorf("Status: %s not OK: %s", h.Name, h.Detail)
		}
	}
	var ids []string
	for _, cache := range []string{"MISS", "HIT"} {
		res, _ := get(t, "http://"+a.Edges[0]+"/static/js/app-001.js")
		if res.Header.Get("X-Cache-Status") != cache {
			t.Fatalf("X-Cache-Status %q, want %s", res.Header.Get("X-Cache-Status"), cache)
		}
		ids = append(ids, "ast_"+res.Header.Get("X-Request-Id"))
	}
	// The followers write in batches; the list shows them within seconds.
	u := fmt.Sprintf("http://%s/api/v1/assets?region=FRA1&limit=10", a.Edge)
	var page struct {
		Data []struct {
			ID          string `json:"id"`
			Path        string `json:"path"`
			CacheStatus string `json:"cache_status"`
			Region      string `json:"region"`
		} `json:"data"`
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, body := get(t, u)
		page.Data = nil
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatalf("GET %s: %v: %s", u, err, body)
		}
		if len(page.Data) >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	got := map[string]string{}
	for _, d := range page.Data {
		if d.Path == "/static/js/app-001.js" && d.Region == "FRA1" {
			got[d.ID] = d.CacheStatus
		}
	}
	if got[ids[0]] != "MISS" || got[ids[1]] != "HIT" || len(got) != 2 {
		t.Errorf("assets of FRA1: %+v; want %s MISS and %s HIT", page.Data, ids[0], ids[1])
	}

	// The files list is the origin's, and follows it.
	files := listFiles(t, a.API)
	if len(files) != 321 {
		t.Errorf("the files list holds %d files, want the origin's 321", len(files))
	}
	_, body := get(t, "http://"+a.Origin+"/static/js/app-001.js")
	if want := fmt.Sprintf("sha256:%x", sha256.Sum256(body)); files["static/js/app-001.js"] != want {
		t.Errorf("static/js/app-001.js listed with checksum %q, want %s", files["static/js/app-001.js"], want)
	}

	// The README's upload, as written: curl -T with the upload key. It is
	// listed within 3 s with sha256sum's checksum, then served by an edge,
	// a MISS and then a HIT.
	logo := bytes.Repeat([]byte("logo "), 20000)
	src := filepath.Join(t.TempDir(), "logo.png")
	if err := os.WriteFile(src, logo, 0o644); err != nil {
		t.Fatal(err)
	}
	curl := exec.Command("curl", "-sS", "-f", "-T", src, "-H", "Authorization: Bearer "+c.UploadKey,
		"http://"+a.Upload+"/img/logo.png")
	if out, err := curl.CombinedOutput(); err != nil {
		t.Fatalf("curl -T: %v: %s", err, out)
	}
	uploaded := time.Now()
	want := fmt.Sprintf("sha256:%x", sha256.Sum256(logo))
	for files = listFiles(t, a.API); files["img/logo.png"] != want; files = listFiles(t, a.API) {
		if time.Since(uploaded) > 3*time.Second {
			t.Fatalf("img/logo.png not listed with %s within 3s: %q", want, files["img/logo.png"])
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("uploaded to listed in %v", time.Since(uploaded).Round(time.Millisecond))
	for _, cache := range []string{"MISS", "HIT"} {
		res, body := get(t, "http://"+a.Edges[1]+"/img/logo.png")
		if res.StatusCode != 200 || res.Header.Get("X-Cache-Status") != cache || !bytes.Equal(body, logo) {
			t.Fatalf("the uploaded logo through IAD1: %d %s, want 200 %s and the file", res.StatusCode, res.Header.Get("X-Cache-Status"), cache)
		}
	}

	// Every component is measured, and with the upload path up, each
	// reads operational: the canary made its round trip.
	for start := time.Now(); ; time.Sleep(100 * time.Millisecond) {
		_, body := get(t, "http://"+a.API+"/api/v1/status")
		var doc struct{ Status string }
		if json.Unmarshal(body, &doc) == nil && doc.Status == "operational" {
			break
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("the status is not operational 30s after up: %s", body)
		}
	}

	// The EICAR test string: never listed, never served, quarantined.
	req, _ := http.NewRequest(http.MethodPut, "http://"+a.Upload+"/eicar.com", strings.NewReader(clamdtest.EICAR))
	req.Header.Set("Authorization", "Bearer "+c.UploadKey)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("PUT of the EICAR file: %d", res.StatusCode)
	}
	quarantine := filepath.Join(c.uploadsRoot(), "quarantine", Project)
	for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		if q, _ := os.ReadDir(quarantine); len(q) == 1 {
			break
		}
		if time.Since(start) > 10*time.Second {
			t.Fatal("the EICAR file is not in quarantine after 10s")
		}
	}
	if _, listed := listFiles(t, a.API)["eicar.com"]; listed {
		t.Error("the EICAR file is listed")
	}
	if res, _ := get(t, "http://"+a.Edges[0]+"/eicar.com"); res.StatusCode != http.StatusNotFound {
		t.Errorf("an edge answers %d for the EICAR file, want 404", res.StatusCode)
	}
}

// TestShippedEdge runs the CDN's second layout by hand, without the upload
// path: SIN1's edge runs no follower, and syslog-ng, configured by the
// repository's deploy/syslog-ng/cdnapi-edge.conf, ships its log to serve's
// ingest address with an edge key; a request through SIN1 is listed, and
// every part answers. (Up with Options.Ship starts the same parts, after
// the upload path that TestUp covers.)
func TestShippedEdge(t *testing.T) {
	nginxtest.Require(t)
	syslogngtest.Require(t)
	a := freeAddrs(t)
	dir := t.TempDir()
	c := &CDN{Dir: filepath.Join(dir, "cdn"), Repo: repo(t), DB: "sqlite:" + filepath.Join(dir, "cdn", "cdnapi.db"),
		Origin: a.Origin, statePath: filepath.Join(dir, "state.json"), ship: "SIN1"}
	for _, d := range []string{c.Dir, filepath.Join(c.uploadsRoot(), "incoming")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if err := c.Down(io.Discard); err != nil {
			t.Errorf("Down: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	say := func(format string, args ...any) { t.Logf(format, args...) }
	if _, _, err := writeOrigin(c.originRoot()); err != nil {
		t.Fatal(err)
	}
	if err := c.build(ctx, say); err != nil {
		t.Fatal(err)
	}
	if err := c.loadRegions(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.createEdgeKey(ctx, "SIN1", say); err != nil {
		t.Fatal(err)
	}
	for _, start := range []func(context.Context, Addrs, func(string, ...any)) error{
		c.startOrigin, c.startEdges, c.startFollowers, c.startServe, c.startShippers,
	} {
		if err := start(ctx, a, say); err != nil {
			t.Fatal(err)
		}
	}
	names := map[string]bool{}
	for _, h := range c.Status(ctx) {
		names[h.Name] = true
		if !h.OK {
			t.Errorf("Status: %s not OK: %s", h.Name, h.Detail)
		}
	}
	if names["follow-SIN1"] || !names["syslog-ng-SIN1"] || !names["follow-FRA1"] {
		t.Errorf("parts %v: want syslog-ng for SIN1 and followers for the others", names)
	}
	res, _ := get(t, "http://"+a.Edges[2]+"/static/js/app-001.js")
	id := "ast_" + res.Header.Get("X-Request-Id")
	u := fmt.Sprintf("http://%s/api/v1/assets?region=SIN1&limit=10", a.Edge)
	for start := time.Now(); ; time.Sleep(100 * time.Millisecond) {
		_, body := get(t, u)
		if strings.Contains(string(body), id) {
			t.Logf("SIN1's request listed %v after its answer", time.Since(start).Round(time.Millisecond))
			break
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("%s not listed in SIN1's assets within 30 s: %s", id, body)
		}
	}
}

// listFiles pages through the files list of the API at addr, and returns
// each file's checksum by filename.
func listFiles(t *testing.T, addr string) map[string]string {
	t.Helper()
	files := make(map[string]string)
	u := "http://" + addr + "/api/v1/files?limit=100"
	for range 100 {
		var page struct {
			Data []struct {
				Filename string `json:"filename"`
				Checksum string `json:"checksum"`
			} `json:"data"`
			NextCursor *string `json:"next_cursor"`
		}
		_, body := get(t, u)
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatalf("GET %s: %v: %s", u, err, body)
		}
		for _, f := range page.Data {
			files[f.Filename] = f.Checksum
		}
		if page.NextCursor == nil {
			return files
		}
		u = "http://" + addr + "/api/v1/files?limit=100&cursor=" + url.QueryEscape(*page.NextCursor)
	}
	t.Fatal("the files list does not end")
	return nil
}
