package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/cdnapi/cdnapi/internal/redistest"
)

// The monitoring kit: deploy/prometheus (scrape config, recording rules,
// alerts and their unit tests) and deploy/grafana/cdnapi.json. Its tests
// run Debian's prometheus and promtool; without them a test skips, except
// when CI is "true" or "1": there it fails, so CI never passes by skipping.

const (
	promDir      = "../../deploy/prometheus"
	dashboardDir = "../../deploy/grafana"
)

// requireBinary returns the path of name, or ends t: a skip, or a failure
// in CI.
func requireBinary(t *testing.T, name, pkg string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		if ci := os.Getenv("CI"); ci == "true" || ci == "1" {
			t.Fatalf("%s is required in CI (apt-get install %s): %v", name, pkg, err)
		}
		t.Skipf("%s is not installed (apt-get install %s): %v", name, pkg, err)
	}
	return path
}

// TestMonitoringKitChecks: promtool accepts the scrape config and the rule
// files, and the alerts' unit tests pass (each alert fires in one case and
// not in another).
func TestMonitoringKitChecks(t *testing.T) {
	promtool := requireBinary(t, "promtool", "prometheus")
	for _, args := range [][]string{
		{"check", "config", "prometheus.yml"},
		{"check", "rules", "cdnapi.rules.yml", "cdnapi.alerts.yml"},
		{"test", "rules", "cdnapi.alerts_test.yml"},
	} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = promDir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// TestMonitoringKitQueries runs a real Prometheus, with the kit's rule
// files, against a real serve (with its rate limits in a real Redis) and a
// real follow, makes traffic through both, and runs every expression of
// the dashboard and of the rules through Prometheus's HTTP API: each must
// parse, and each must return data, except the alerts', which are empty
// while all is well. Every metric an alert names must have data, so that
// an alert over a misspelt metric cannot pass for one that does not fire.
func TestMonitoringKitQueries(t *testing.T) {
	prometheus := requireBinary(t, "prometheus", "prometheus")
	redis := redistest.Start(t)
	dir := t.TempDir()

	db := migratedDB(t, "cdnapi.db")
	mustRunCmd(t, demoRegionsNDJSON(t), "ingest", "regions", "--db", db)
	edgeLog := filepath.Join(dir, "edge.log")
	if err := os.WriteFile(edgeLog, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	followAddr := freeAddr(t)
	followInProcess(t, "--db", db, "--metrics-addr", followAddr, edgeLog)
	// The ingest address, where an edge of SIN1 ships its lines, with an
	// edge key of its own (the hit ratio counts both ways in).
	edgeKey := newProjectKey(t, db, "--scope", "edge", "--region", "SIN1")
	ingestAddr := freeAddr(t)
	srv := startServe(t, nil, "--db", db, "--rate-limit", "10000", "--rate-limit-redis", redis.URL, "--ingest-addr", ingestAddr)

	// Prometheus, scraping both every second and evaluating the rules as
	// often, with the kit's scrape jobs pointed at them.
	admin := strings.TrimPrefix(srv.admin, "http://")
	cfg := fmt.Sprintf(`global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: [%q, %q]
scrape_configs:
  - job_name: cdnapi
    static_configs: [{targets: [%q]}]
  - job_name: cdnapi-follow
    static_configs: [{targets: [%q]}]
`, abs(t, promDir, "cdnapi.rules.yml"), abs(t, promDir, "cdnapi.alerts.yml"), admin, followAddr)
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	promURL := startPrometheus(t, prometheus, cfgPath, filepath.Join(dir, "tsdb"))

	// A status page's stream, open while Prometheus scrapes.
	streamCtx, closeStream := context.WithCancel(t.Context())
	defer closeStream()
	streamReq, _ := http.NewRequestWithContext(streamCtx, http.MethodGet, srv.api+"/api/v1/status/stream", nil)
	if resp, err := http.DefaultClient.Do(streamReq); err != nil {
		t.Fatal(err)
	} else {
		defer resp.Body.Close()
	}

	// Traffic: pages of the API and the edge listener, a 404, edge
	// requests in the follower's log, HIT and MISS in two regions, and a
	// HIT of SIN1 shipped to the ingest address, until Prometheus has
	// rates of them all (two scrapes with traffic between).
	c := &http.Client{Timeout: 5 * time.Second}
	n := 0
	traffic := func() {
		for _, u := range []string{srv.api + "/api/v1/files?limit=5", srv.api + "/api/v1/status", srv.api + "/api/v1/regions",
			srv.api + "/", srv.api + "/api/v1/nope", srv.edge + "/api/v1/assets?limit=5"} {
			if resp, err := c.Get(u); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}
		f, err := os.OpenFile(edgeLog, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for _, r := range []struct{ region, cache string }{{"FRA1", "HIT"}, {"FRA1", "MISS"}, {"AMS1", "HIT"}} {
			n++
			now := time.Now()
			fmt.Fprintf(f, `{"request_id":"%032x","msec":%d.%03d,"region":"%s","request_method":"GET","uri":"/f/%d.bin","status":200,"body_bytes_sent":100,"upstream_cache_status":"%s"}`+"\n",
				n, now.Unix(), now.Nanosecond()/1e6, r.region, n, r.cache)
		}
		n++
		if status, body := postEdgeLogs(t, "http://"+ingestAddr, edgeKey, edgeLogLine(n, "SIN1")); status != http.StatusOK {
			t.Fatalf("a batch of SIN1 to the ingest address: %d %s", status, body)
		}
	}
	ready := []string{
		`up{job="cdnapi"} == 1`,
		`cdnapi_http_streams_open{route="/api/v1/status/stream"} == 1`,
		`up{job="cdnapi-follow"} == 1`,
		`rate(cdnapi_http_requests_total{listener="edge"}[5m]) > 0`,
		`rate(cdnapi_follow_assets_total{cache_status="HIT"}[5m]) > 0`,
		`listener:cdnapi_http_request_duration_seconds:p99_5m{listener="edge"}`,
		`region:cdnapi_assets_hit:ratio_rate5m{region="AMS1"}`,
		`region:cdnapi_assets_hit:ratio_rate5m{region="SIN1"}`,
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		traffic()
		var missing []string
		for _, q := range ready {
			if res, err := promQuery(promURL, q); err != nil || len(res) == 0 {
				missing = append(missing, q)
			}
		}
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus has no data for %q within 90s", missing)
		}
		time.Sleep(200 * time.Millisecond) // a pace for the traffic, not a wait for an event
	}

	// The alerts that are empty here, and why: none of them fires while
	// serve, follow and Redis are well. Their metrics are checked below.
	mayBeEmpty := map[string]string{
		"CdnapiDown":                 "both targets are up",
		"CdnapiHigh5xxRatio":         "no request fails",
		"CdnapiHighLatency":          "loopback answers in milliseconds",
		"CdnapiStatusNotOperational": "every component is operational",
		"CdnapiComponentOutage":      "no component is in an outage",
		"CdnapiRegionOutage":         "the demo regions are operational",
		"CdnapiStoreErrors":          "no store call fails",
		"CdnapiFollowerStoreErrors":  "no follower store call fails",
		"CdnapiFollowerLag":          "the follower commits within a second",
		"CdnapiEdgeLogStoreErrors":   "every batch to the ingest address commits",
		"CdnapiEdgeLogRejectedLines": "the ingest address's lines are all valid",
		"CdnapiWebhookBacklog":       "no webhook is registered",
		"CdnapiWebhookGaveUp":        "no webhook is registered",
		"CdnapiRateLimitUnchecked":   "Redis answers",
		"CdnapiRateLimitRedisDown":   "Redis answers",
		"CdnapiWALOverLimit":         "the WAL stays small",
	}
	// An alert over a quantile of the test's few answers: on a loaded
	// machine one answer over 250 ms among them lifts the p99 over its
	// threshold (the real alert waits 10 minutes). It must still parse and
	// read metrics that have data.
	mayFireUnderLoad := map[string]bool{"CdnapiHighLatency": true}
	exprs := kitExpressions(t)
	metricName := regexp.MustCompile(`\b(?:up|[a-z_:]*cdnapi_[a-z0-9_:]*)\b`)
	names := map[string]bool{}
	alerts := 0
	for _, e := range exprs {
		res, err := promQuery(promURL, e.expr)
		switch {
		case err != nil:
			t.Errorf("%s: %s: %v", e.where, e.expr, err)
		case len(res) == 0 && e.alert == "":
			t.Errorf("%s: %s: no data", e.where, e.expr)
		case len(res) == 0 && mayBeEmpty[e.alert] == "":
			t.Errorf("%s: %s: no data, and the alert is not listed as one that may be empty", e.where, e.expr)
		case len(res) > 0 && e.alert != "" && !mayFireUnderLoad[e.alert]:
			t.Errorf("%s fires while all is well: %s: %s", e.where, e.expr, res)
		}
		if e.alert != "" {
			alerts++
			for _, m := range metricName.FindAllString(e.expr, -1) {
				names[m] = true
			}
		}
	}
	if alerts != len(mayBeEmpty) {
		t.Errorf("%d alerts in cdnapi.alerts.yml, %d listed in mayBeEmpty: list each, with why it is empty", alerts, len(mayBeEmpty))
	}
	for _, m := range slices.Sorted(maps.Keys(names)) {
		if res, err := promQuery(promURL, m); err != nil || len(res) == 0 {
			t.Errorf("metric %s, which an alert reads, has no data (%v)", m, err)
		}
	}
	t.Logf("%d expressions run (%d of alerts); the alerts read %d metrics", len(exprs), alerts, len(names))
}

// kitExpression is one PromQL expression of the kit and where it is.
type kitExpression struct {
	where, expr string
	alert       string // the alert's name, for an alert's expression
}

// kitExpressions returns every expression of the dashboard's panels and
// of the rule files.
func kitExpressions(t *testing.T) []kitExpression {
	t.Helper()
	var out []kitExpression
	raw, err := os.ReadFile(filepath.Join(dashboardDir, "cdnapi.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("cdnapi.json: %v", err)
	}
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			out = append(out, kitExpression{where: "panel " + p.Title, expr: tg.Expr})
		}
	}
	for _, file := range []string{"cdnapi.rules.yml", "cdnapi.alerts.yml"} {
		raw, err := os.ReadFile(filepath.Join(promDir, file))
		if err != nil {
			t.Fatal(err)
		}
		var rules struct {
			Groups []struct {
				Rules []struct{ Record, Alert, Expr string }
			}
		}
		if err := yaml.Unmarshal(raw, &rules); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, g := range rules.Groups {
			for _, r := range g.Rules {
				out = append(out, kitExpression{where: file + " " + r.Record + r.Alert, expr: r.Expr, alert: r.Alert})
			}
		}
	}
	return out
}

// startPrometheus runs prometheus with the config at cfg and its storage
// in dir, on a free loopback port, until the test ends, and returns its
// URL once it is ready.
func startPrometheus(t *testing.T, bin, cfg, dir string) string {
	t.Helper()
	addr := freeAddr(t)
	logFile, err := os.Create(filepath.Join(filepath.Dir(cfg), "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close() // the child has its own descriptor
	cmd := exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+dir,
		"--web.listen-address="+addr, "--storage.tsdb.retention.time=1h")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// It goes with the test binary, even one killed by -timeout.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start prometheus: %v", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	u := "http://" + addr
	c := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := c.Get(u + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return u
			}
		}
		select {
		case <-done:
			log, _ := os.ReadFile(logFile.Name())
			t.Fatalf("prometheus exited:\n%s", log)
		default:
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logFile.Name())
			t.Fatalf("prometheus not ready within 30s (%v):\n%s", err, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// promQuery runs an instant query and returns its vector's series; an
// expression that does not parse is an error.
func promQuery(base, expr string) ([]json.RawMessage, error) {
	resp, err := http.PostForm(base+"/api/v1/query", url.Values{"query": {expr}})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Status, Error string
		Data          struct {
			ResultType string
			Result     json.RawMessage
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("%s: %w", resp.Status, err)
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("%s: %s", resp.Status, body.Error)
	}
	if body.Data.ResultType != "vector" {
		return nil, fmt.Errorf("result of type %s, want a vector", body.Data.ResultType)
	}
	var series []json.RawMessage
	err = json.Unmarshal(body.Data.Result, &series)
	return series, err
}

// abs returns the absolute path of dir/name.
func abs(t *testing.T, dir, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}
