package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/apitest"
	"github.com/cdnapi/cdnapi/internal/pgtest"
)

// getenvFrom returns a getenv over a fixed map, so tests never read the
// real environment.
func getenvFrom(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// server is a `cdnapi serve` running in-process on loopback ports.
type server struct {
	api, edge, admin string // base URLs
	stop             func() error
}

// startServe runs the real program with `serve` on port 0 and waits for it
// to log its three addresses.
func startServe(t testing.TB, env map[string]string, args ...string) *server {
	t.Helper()
	args = append([]string{"serve", "--api-addr", "127.0.0.1:0", "--edge-addr", "127.0.0.1:0",
		"--admin-addr", "127.0.0.1:0", "--status-interval", "100ms"}, args...)
	ctx, cancel := context.WithCancel(context.Background())
	logs, logw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(ctx, args, getenvFrom(env), strings.NewReader(""), io.Discard, logw)
		logw.Close()
		done <- err
	}()

	addrs := map[string]string{}
	scanner := bufio.NewScanner(logs)
	for n := 0; len(addrs) < 3 && scanner.Scan(); n++ {
		var line struct{ Msg, Listener, Addr, Version string }
		if json.Unmarshal(scanner.Bytes(), &line) == nil && line.Msg == "listening" {
			addrs[line.Listener] = "http://" + line.Addr
		}
		// The first line says which build is running.
		if n == 0 && (line.Msg != "starting" || line.Version == "") {
			t.Errorf("first log line %s: want msg starting with the version", scanner.Bytes())
		}
	}
	if len(addrs) < 3 {
		cancel()
		t.Fatalf("serve did not come up: %v", <-done)
	}
	go io.Copy(io.Discard, logs) // keep the log pipe flowing

	s := &server{api: addrs["api"], edge: addrs["edge"], admin: addrs["admin"]}
	var stopped bool
	s.stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(30 * time.Second):
			return errors.New("serve did not stop within 30s")
		}
	}
	t.Cleanup(func() {
		if err := s.stop(); err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return s
}

// overallOf is the overall status of a serve with no upload service and
// no scanner configured, whose other components read s: those two read
// under_maintenance (not deployed), and the overall status is the worst.
func overallOf(s cdnapi.Status) cdnapi.Status {
	return cdnapi.Worst(s, cdnapi.StatusUnderMaintenance)
}

// get fetches url, validates the answer against the OpenAPI document, and
// returns it with its body.
func get(t *testing.T, v *apitest.Validator, url string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	v.Check(t, req, res, body)
	return res, body
}

type listPage struct {
	Object     string            `json:"object"`
	Data       []json.RawMessage `json:"data"`
	HasMore    bool              `json:"has_more"`
	NextCursor *string           `json:"next_cursor"`
}

// TestMain doubles as the cdnapi program: a test that needs cdnapi as a
// separate process (to kill it, or to run several) runs its own test binary
// with CDNAPI_TEST_AS_MAIN=1 and the program's arguments after "--".
func TestMain(m *testing.M) {
	if os.Getenv("CDNAPI_TEST_AS_MAIN") == "1" {
		for i, arg := range os.Args {
			if arg == "--" {
				os.Args = append([]string{"cdnapi"}, os.Args[i+1:]...)
				break
			}
		}
		main()
		os.Exit(0)
	}
	os.Exit(pgtest.Main(m))
}

// TestServeEndToEnd runs the whole program with demo data, on each engine,
// and walks every endpoint of every listener over real HTTP.
func TestServeEndToEnd(t *testing.T) {
	engines := []struct {
		name string
		dsn  func(t *testing.T) string
	}{
		{"sqlite", func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "e2e.db") }},
		{"postgres", func(t *testing.T) string { return pgtest.NewDatabase(t) }},
	}
	for _, engine := range engines {
		t.Run(engine.name, func(t *testing.T) {
			s := startServe(t, nil, "--db", engine.dsn(t), "--demo", "--region", "Frankfurt")
			walkEndpoints(t, s)
		})
	}
}

// walkEndpoints checks every endpoint of a server that holds the demo data.
func walkEndpoints(t *testing.T, s *server) {
	v := apitest.NewValidator(t)

	t.Run("files walk", func(t *testing.T) {
		seen := map[string]bool{}
		url := s.api + "/api/v1/files?limit=100"
		for pages := 0; url != ""; pages++ {
			if pages > demoFiles {
				t.Fatal("the walk does not end")
			}
			res, body := get(t, v, url)
			if res.StatusCode != 200 {
				t.Fatalf("GET %s = %d %s", url, res.StatusCode, body)
			}
			var p listPage
			if err := json.Unmarshal(body, &p); err != nil {
				t.Fatal(err)
			}
			for _, raw := range p.Data {
				var f struct{ ID string }
				json.Unmarshal(raw, &f)
				if seen[f.ID] {
					t.Fatalf("file %s seen twice", f.ID)
				}
				seen[f.ID] = true
			}
			url = ""
			if link := res.Header.Get("Link"); p.HasMore {
				// Link: </api/v1/files?...>; rel="next"
				start, end := strings.Index(link, "<"), strings.Index(link, ">")
				if start < 0 || end < start || !strings.HasSuffix(link, `rel="next"`) {
					t.Fatalf("has_more but Link = %q", link)
				}
				url = s.api + link[start+1:end]
			}
		}
		if len(seen) != demoFiles {
			t.Errorf("walked %d files, want %d", len(seen), demoFiles)
		}
	})

	t.Run("regions", func(t *testing.T) {
		res, body := get(t, v, s.edge+"/api/v1/regions")
		var p listPage
		if err := json.Unmarshal(body, &p); err != nil || res.StatusCode != 200 {
			t.Fatalf("regions = %d %s", res.StatusCode, body)
		}
		if len(p.Data) < 12 || p.HasMore {
			t.Errorf("regions: %d items, has_more %v; want at least 12 on one page", len(p.Data), p.HasMore)
		}
		if got := res.Header.Get("Cache-Control"); got != "public, max-age=300" {
			t.Errorf("regions Cache-Control = %q", got)
		}
	})

	t.Run("assets of one region", func(t *testing.T) {
		res, body := get(t, v, s.edge+"/api/v1/assets?region=FRA1&limit=50")
		var p listPage
		if err := json.Unmarshal(body, &p); err != nil || res.StatusCode != 200 {
			t.Fatalf("assets = %d %s", res.StatusCode, body)
		}
		for _, raw := range p.Data {
			var a struct{ Region string }
			json.Unmarshal(raw, &a)
			if a.Region != "FRA1" {
				t.Fatalf("asset of region %q in the FRA1 list", a.Region)
			}
		}
		if len(p.Data) == 0 {
			t.Error("no FRA1 assets in the demo data")
		}
	})

	t.Run("status", func(t *testing.T) {
		// One probe slower than the threshold (250 ms) reads as
		// degraded_performance until the next, as it should: on a loaded
		// machine under the race detector that happens. A healthy store
		// must read as operational at the next probe (every 5 s).
		var body []byte
		for deadline := time.Now().Add(12 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			var res *http.Response
			res, body = get(t, v, s.api+"/api/v1/status")
			var doc struct {
				Status, Version, Region string
				Components              []struct{ Name, Status string }
			}
			if err := json.Unmarshal(body, &doc); err != nil || res.StatusCode != 200 {
				t.Fatalf("status = %d %s", res.StatusCode, body)
			}
			if doc.Version != "v1" || doc.Region != "Frankfurt" || len(doc.Components) != 4 {
				t.Fatalf("status document = %s", body)
			}
			if doc.Status == string(overallOf(cdnapi.StatusOperational)) {
				return
			}
			if time.Now().After(deadline) {
				break
			}
		}
		t.Errorf("status not operational within two probe intervals (12 s): %s", body)
	})

	t.Run("wrong listener", func(t *testing.T) {
		for _, url := range []string{s.api + "/api/v1/regions", s.edge + "/api/v1/files"} {
			if res, body := get(t, v, url); res.StatusCode != 404 || !bytes.Contains(body, []byte("address")) {
				t.Errorf("GET %s = %d %s; want 404 naming the right address", url, res.StatusCode, body)
			}
		}
	})

	t.Run("openapi on both addresses", func(t *testing.T) {
		for _, base := range []string{s.api, s.edge} {
			res, body := get(t, v, base+"/api/v1/openapi.json")
			if res.StatusCode != 200 || !json.Valid(body) || !bytes.Contains(body, []byte(`"openapi"`)) {
				t.Errorf("%s/api/v1/openapi.json = %d", base, res.StatusCode)
			}
		}
	})

	t.Run("admin", func(t *testing.T) {
		for _, path := range []string{"/healthz", "/readyz", "/metrics", "/debug/pprof/"} {
			res, err := http.Get(s.admin + path)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != 200 {
				t.Errorf("GET %s = %d", path, res.StatusCode)
			}
			if path == "/metrics" && !bytes.Contains(body, []byte(`cdnapi_build_info{go_version="go`)) {
				t.Error("/metrics has no cdnapi_build_info")
			}
		}
	})

	if err := s.stop(); err != nil {
		t.Fatalf("graceful stop: %v", err)
	}
}

func TestServeEnvironment(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	db := "sqlite:" + filepath.Join(t.TempDir(), "env.db")
	// CDNAPI_REGION is read from the environment; the --edge-addr that
	// startServe passes wins over CDNAPI_EDGE_ADDR.
	s := startServe(t, map[string]string{"CDNAPI_REGION": "Paris", "CDNAPI_EDGE_ADDR": "127.0.0.1:1"},
		"--db", db, "--api-addr", addr)
	if s.api != "http://"+addr {
		t.Errorf("api address = %s, want %s from the flag", s.api, addr)
	}
	if s.edge == "http://127.0.0.1:1" {
		t.Error("CDNAPI_EDGE_ADDR won over --edge-addr")
	}
	v := apitest.NewValidator(t)
	_, body := get(t, v, s.api+"/api/v1/status")
	if !bytes.Contains(body, []byte(`"region":"Paris"`)) {
		t.Errorf("CDNAPI_REGION not honoured: %s", body)
	}
}

// TestServePublicURL: serve --public-url (here CDNAPI_PUBLIC_URL) is the
// base of the Atom feed's links, and the API address the / page names.
func TestServePublicURL(t *testing.T) {
	const public = "https://status.example.com"
	s := startServe(t, map[string]string{"CDNAPI_PUBLIC_URL": public + "/"},
		"--db", "sqlite:"+filepath.Join(t.TempDir(), "public.db"))
	v := apitest.NewValidator(t)
	_, feed := get(t, v, s.api+"/api/v1/status/incidents.atom")
	if !bytes.Contains(feed, []byte(`<link rel="self" type="application/atom+xml" href="`+public+`/api/v1/status/incidents.atom">`)) {
		t.Errorf("the feed's self link is not under %s: %s", public, feed)
	}
	res, err := http.Get(s.api + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !bytes.Contains(page, []byte("<code>"+public+"</code>")) {
		t.Errorf("/ does not name %s: %s", public, page)
	}
}

func TestRunFailsClearly(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	db := "sqlite:" + filepath.Join(t.TempDir(), "x.db")

	tests := []struct {
		name  string
		args  []string
		env   map[string]string
		usage bool   // a command-line mistake: exit status 2
		want  string // in the one-line message
	}{
		{"no command", nil, nil, true, "no command"},
		{"unknown command", []string{"serv"}, nil, true, `unknown command "serv"`},
		{"unknown flag", []string{"serve", "--nope"}, nil, true, "nope"},
		{"bad flag value", []string{"serve", "--store-timeout", "soon"}, nil, true, "store-timeout"},
		{"bad env value", []string{"serve"}, map[string]string{"CDNAPI_DEMO": "maybe"}, true, "CDNAPI_DEMO"},
		{"stray argument", []string{"migrate", "now"}, nil, true, `unexpected argument "now"`},
		{"bad dsn scheme", []string{"migrate", "--db", "mysql://x"}, nil, true, "mysql"},
		{"empty dsn", []string{"migrate", "--db", ""}, nil, true, "--db"},
		{"port in use", []string{"serve", "--db", db, "--api-addr", busy.Addr().String(),
			"--edge-addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0"}, nil, false, "address already in use"},
		{"short secret", []string{"serve", "--db", db, "--cursor-secret", "short"}, nil, true, "16 bytes"},
		{"bad project", []string{"serve", "--db", db, "--project", "a b"}, nil, true, "--project"},
		{"canary project", []string{"serve", "--db", db, "--project", "cdnapi-canary"}, nil, true,
			`--project "cdnapi-canary" is reserved for the upload canary; choose another`},
		{"bad log format", []string{"serve", "--log-format", "xml"}, nil, true, "log-format"},
		{"relative public URL", []string{"serve", "--public-url", "/status"}, nil, true, "--public-url"},
		{"public URL with a query", []string{"serve", "--public-url", "https://status.example.com/?a=1"}, nil, true, "--public-url"},
		{"uploads without a scan timeout", []string{"uploads", "root", "--clamd", "unix:/x", "--scan-timeout", "0s"}, nil, true, "--scan-timeout"},
		{"uploads without a per-MiB allowance", []string{"uploads", "root", "--clamd", "unix:/x", "--scan-timeout-per-mib", "-1s"}, nil, true, "--scan-timeout-per-mib"},
		{"seed negative", []string{"seed", "--db", db, "--files", "-1"}, nil, true, "negative"},
		{"seed bad now", []string{"seed", "--db", db, "--now", "yesterday"}, nil, true, "RFC 3339"},
		{"status unknown component", []string{"status", "set", "Disk", "operational", "--db", db}, nil, true, `unknown component "Disk"`},
		{"status unknown status", []string{"status", "set", "API", "fine", "--db", db}, nil, true, `unknown status "fine"`},
		{"status past until", []string{"status", "set", "API", "under_maintenance", "--until", "2000-01-01T00:00:00Z", "--db", db}, nil, true, "future"},
		{"status negative until", []string{"status", "set", "API", "under_maintenance", "--until", "-1h", "--db", db}, nil, true, "future"},
		{"status bad until", []string{"status", "set", "API", "under_maintenance", "--until", "soon", "--db", db}, nil, true, "duration such as 2h"},
		{"status wrong arity", []string{"status", "set", "API"}, nil, true, "want list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var stdout, stderr bytes.Buffer
			err := run(ctx, tt.args, getenvFrom(tt.env), strings.NewReader(""), &stdout, &stderr)
			if err == nil {
				t.Fatal("run succeeded")
			}
			if errors.Is(err, errUsage) != tt.usage {
				t.Errorf("usage error = %v, want %v (err %v)", errors.Is(err, errUsage), tt.usage, err)
			}
			if msg := err.Error(); !strings.Contains(msg, tt.want) || strings.Contains(msg, "\n") {
				t.Errorf("error %q: want one line containing %q", msg, tt.want)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"serve", "--help"}, {"seed", "-h"}, {"status", "--help"}, {"version", "--help"}} {
		var stdout bytes.Buffer
		err := run(context.Background(), args, getenvFrom(nil), strings.NewReader(""), &stdout, io.Discard)
		if !errors.Is(err, flag.ErrHelp) || !strings.Contains(stdout.String(), "Usage: cdnapi") {
			t.Errorf("%v: err %v, output %q", args, err, stdout.String())
		}
	}
}

// A subcommand has its own usage, which names it.
func TestSubcommandHelp(t *testing.T) {
	help := func(args ...string) string {
		var stdout bytes.Buffer
		err := run(context.Background(), args, getenvFrom(nil), strings.NewReader(""), &stdout, io.Discard)
		if !errors.Is(err, flag.ErrHelp) {
			t.Errorf("%v: err %v, want flag.ErrHelp", args, err)
		}
		return stdout.String()
	}
	tests := []struct {
		args []string
		want string // the start of the first line
	}{
		{[]string{"status", "--help"}, "Usage: cdnapi status list | set NAME STATUS"},
		{[]string{"status", "set", "--help"}, "Usage: cdnapi status set NAME STATUS [--until D|T]"},
		{[]string{"status", "set", "API", "-h"}, "Usage: cdnapi status set NAME STATUS [--until D|T]"},
		{[]string{"status", "clear", "--help"}, "Usage: cdnapi status clear NAME"},
		{[]string{"status", "list", "--help"}, "Usage: cdnapi status list  [--db DSN]"},
		{[]string{"regions", "--help"}, "Usage: cdnapi regions [list] | set-status"},
		{[]string{"regions", "set-status", "--help"}, "Usage: cdnapi regions set-status CODE STATUS [--until D|T]"},
		{[]string{"regions", "list", "--help"}, "Usage: cdnapi regions list  [--db DSN]"},
	}
	for _, tt := range tests {
		if got, _, _ := strings.Cut(help(tt.args...), "\n"); !strings.HasPrefix(got, tt.want) {
			t.Errorf("%v printed %q first, want %q", tt.args, got, tt.want)
		}
	}
}

func TestStatusCommand(t *testing.T) {
	db := migratedDB(t, "status.db")
	steps := []struct {
		args []string
		want string // a line of the output
	}{
		{[]string{"status", "--db", db}, "Virus Scanning  -"},
		{[]string{"status", "set", "virus scanning", "under_maintenance", "--db", db, "--until", "2999-01-01T00:00:00Z"},
			"Virus Scanning  under_maintenance  2999-01-01T00:00:00Z"},
		{[]string{"status", "set", "Upload Service", "partial_outage", "--db", db}, "Upload Service  partial_outage"},
		{[]string{"status", "set", "API", "under_maintenance", "--until", "2h", "--db", db},
			"API             under_maintenance  " + time.Now().Add(2*time.Hour).UTC().Format("2006-01-02T15")},
		{[]string{"status", "clear", "Virus Scanning", "--db", db}, "Virus Scanning  -"},
	}
	for _, step := range steps {
		var stdout bytes.Buffer
		if err := run(context.Background(), step.args, getenvFrom(nil), strings.NewReader(""), &stdout, io.Discard); err != nil {
			t.Fatalf("%v: %v", step.args, err)
		}
		if !strings.Contains(stdout.String(), step.want) {
			t.Errorf("%v printed\n%s\nwant a line with %q", step.args, stdout.String(), step.want)
		}
	}
}

// TestRunAsProcess runs cdnapi as a child process, as TestMain allows, and
// checks that SIGTERM first fails /readyz for --shutdown-delay while still
// answering, then drains and ends the process with status 0.
func TestRunAsProcess(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "proc.db")
	cmd := exec.Command(os.Args[0], "--", "serve", "--db", db, "--api-addr", "127.0.0.1:0",
		"--edge-addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0", "--shutdown-delay", "3s")
	cmd.Env = append(os.Environ(), "CDNAPI_TEST_AS_MAIN=1")
	logs, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	scanner := bufio.NewScanner(logs)
	addrs := map[string]string{}
	for len(addrs) < 3 && scanner.Scan() {
		var line struct{ Msg, Listener, Addr string }
		if json.Unmarshal(scanner.Bytes(), &line) == nil && line.Msg == "listening" {
			addrs[line.Listener] = "http://" + line.Addr
		}
	}
	if len(addrs) < 3 {
		cmd.Process.Kill()
		t.Fatalf("cdnapi did not start: %v", cmd.Wait())
	}
	go io.Copy(io.Discard, logs)
	client := &http.Client{Timeout: 5 * time.Second}
	readyz := func() int {
		res, err := client.Get(addrs["admin"] + "/readyz")
		if err != nil {
			return 0
		}
		res.Body.Close()
		return res.StatusCode
	}
	if code := readyz(); code != http.StatusOK {
		t.Fatalf("/readyz before SIGTERM = %d", code)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// Within the delay the process still answers, but says it is not ready.
	deadline := time.Now().Add(2 * time.Second)
	for code := readyz(); code != http.StatusServiceUnavailable; code = readyz() {
		if time.Now().After(deadline) {
			t.Fatalf("/readyz after SIGTERM = %d, want 503 while draining", code)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("cdnapi after SIGTERM: %v", err)
	}
}
