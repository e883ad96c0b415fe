package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi/internal/apitest"
	"github.com/cdnapi/cdnapi/internal/health"
)

func TestRegionProbeFlag(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want []health.RegionProbe
		err  string // a usage error containing this
	}{
		{name: "none"},
		{name: "repeated", args: []string{"--region-probe", "FRA1=http://127.0.0.1:8181/health", "--region-probe", "IAD1=https://iad1.edge.example/health?token=x"},
			want: []health.RegionProbe{{Code: "FRA1", URL: "http://127.0.0.1:8181/health"}, {Code: "IAD1", URL: "https://iad1.edge.example/health?token=x"}}},
		{name: "comma-separated", args: []string{"--region-probe", "FRA1=http://[::1]:8181/, IAD1=http://iad1"},
			want: []health.RegionProbe{{Code: "FRA1", URL: "http://[::1]:8181/"}, {Code: "IAD1", URL: "http://iad1"}}},
		{name: "from the environment", env: map[string]string{"CDNAPI_REGION_PROBE": "FRA1=http://a/h,IAD1=http://b/h"},
			want: []health.RegionProbe{{Code: "FRA1", URL: "http://a/h"}, {Code: "IAD1", URL: "http://b/h"}}},
		{name: "the flag wins over the environment", args: []string{"--region-probe", "NRT1=http://c/h"}, env: map[string]string{"CDNAPI_REGION_PROBE": "FRA1=http://a/h"},
			want: []health.RegionProbe{{Code: "NRT1", URL: "http://c/h"}}},
		{name: "no URL", args: []string{"--region-probe", "FRA1"}, err: "want CODE=URL"},
		{name: "bad code", args: []string{"--region-probe", "fra1=http://a/h"}, err: `region code "fra1"`},
		{name: "relative URL", args: []string{"--region-probe", "FRA1=/health"}, err: "absolute http:// or https:// URL"},
		{name: "other scheme", args: []string{"--region-probe", "FRA1=ftp://a/h"}, err: "absolute http:// or https:// URL"},
		{name: "twice", args: []string{"--region-probe", "FRA1=http://a/h", "--region-probe", "FRA1=http://b/h"}, err: "FRA1 is given twice"},
		{name: "bad in the environment", env: map[string]string{"CDNAPI_REGION_PROBE": "FRA1=http://a/h,IAD1"}, err: "CDNAPI_REGION_PROBE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := parseServeConfig(&environment{getenv: getenvFrom(tt.env), stdout: io.Discard}, tt.args)
			if tt.err != "" {
				if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want a usage error containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(cfg.regionProbes) != len(tt.want) {
				t.Fatalf("probes %v, want %v", cfg.regionProbes, tt.want)
			}
			for i := range tt.want {
				if cfg.regionProbes[i] != tt.want[i] {
					t.Errorf("probes %v, want %v", cfg.regionProbes, tt.want)
				}
			}
		})
	}
}

// testEdge is the health endpoint of a point of presence on a loopback
// port: it can stop, start again on the same port, answer slowly, or fail
// one request in every failEvery.
type testEdge struct {
	t         *testing.T
	addr      string
	mu        sync.Mutex
	srv       *httptest.Server
	slow      atomic.Int64 // nanoseconds each answer waits
	failEvery atomic.Int64 // 0: never fail
	requests  atomic.Int64
}

func startTestEdge(t *testing.T) *testEdge {
	e := &testEdge{t: t}
	e.start()
	t.Cleanup(e.stop)
	return e
}

func (e *testEdge) url() string { return "http://" + e.addr + "/health" }

func (e *testEdge) start() {
	e.t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := e.requests.Add(1)
		time.Sleep(time.Duration(e.slow.Load()))
		if every := e.failEvery.Load(); every > 0 && n%every == 0 {
			http.Error(w, "failing", http.StatusServiceUnavailable)
		}
	}))
	if e.addr != "" {
		l, err := net.Listen("tcp", e.addr) // the same port, as a restarted edge has
		if err != nil {
			e.t.Fatal(err)
		}
		srv.Listener.Close()
		srv.Listener = l
	}
	srv.Start()
	e.addr = srv.Listener.Addr().String()
	e.mu.Lock()
	e.srv = srv
	e.mu.Unlock()
}

func (e *testEdge) stop() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.srv != nil {
		e.srv.Close() // returns once the requests in flight are answered
		e.srv = nil
	}
}

// TestServeRegionProbes runs serve with a probe of FRA1's edge at a 100 ms
// status interval, and checks what GET /api/v1/regions and /status say as
// the edge stops, comes back, slows down and flaps, and while an operator
// has put the region under maintenance; then the incidents it left.
func TestServeRegionProbes(t *testing.T) {
	db := migratedDB(t, "probes.db")
	mustRunCmd(t, demoRegionsNDJSON(t), "ingest", "regions", "--db", db)
	edge := startTestEdge(t)
	// ZZZ9 is in no store: serve warns and carries on.
	s := startServe(t, nil, "--db", db, "--region-probe", "FRA1="+edge.url()+",ZZZ9=http://127.0.0.1:1/health")
	v := apitest.NewValidator(t)
	w := fra1Watch{t: t, v: v, s: s}
	fra1, failed, waitFor, statusPage := w.status, w.failed, w.waitFor, w.page

	waitFor("operational")

	// The edge stops. The bound is counted in rounds, not time: the
	// failure counter moves only after a round's result is published, so
	// once it has counted two failed rounds since the stop, every answer
	// must say major_outage. Polling for it takes what the machine takes.
	edge.stop()
	base := failed()
	deadline := time.Now().Add(15 * time.Second)
	for {
		n := failed() - base
		status := fra1()
		if status == "major_outage" {
			break
		}
		if n >= 2 {
			t.Fatalf("FRA1 is %s after %v failed rounds, want major_outage from the second", status, n)
		}
		if time.Now().After(deadline) {
			t.Fatalf("FRA1 is %s 15s after its edge stopped", status)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if page := statusPage(); !strings.Contains(page, `FRA1</span></span><span class="t-major_outage">Major outage</span>`) {
		t.Errorf("/status does not show FRA1 down")
	}

	edge.start()
	waitFor("operational")
	if page := statusPage(); !strings.Contains(page, `FRA1</span></span><span class="t-operational">Operational</span>`) {
		t.Errorf("/status does not show FRA1 back")
	}

	edge.slow.Store(int64(400 * time.Millisecond)) // over the 250ms slow threshold, within the 1s timeout
	waitFor("degraded_performance")
	edge.slow.Store(0)
	waitFor("operational")

	// One failure in every four answers never makes two of three rounds:
	// FRA1 stays operational throughout.
	// A probe slower than the threshold on a loaded machine is a second
	// bad round in a window, and then FRA1 rightly leaves operational: the
	// probes' histogram says whether there was one.
	slowProbes := func() float64 {
		m, err := scrape(s.admin)
		if err != nil {
			t.Fatal(err)
		}
		return m[`cdnapi_probe_duration_seconds_count{component="region:FRA1"}`] -
			m[`cdnapi_probe_duration_seconds_bucket{component="region:FRA1",le="0.25"}`]
	}
	edge.failEvery.Store(4)
	before, start, slowBefore := failed(), edge.requests.Load(), slowProbes()
	flapped := true
	for flapped && edge.requests.Load()-start < 16 {
		if got := fra1(); got != "operational" {
			if slowProbes() > slowBefore {
				t.Logf("a probe was slow while the edge flapped: FRA1 is %s, rightly", got)
				flapped = false
				break
			}
			t.Fatalf("a flapping edge made FRA1 %s (requests %d since, failures %v since)", got, edge.requests.Load()-start, failed()-before)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if flapped && failed()-before < 3 {
		t.Errorf("the edge did not fail as it should: %v failures", failed()-before)
	}
	edge.failEvery.Store(0)

	// An operator's maintenance wins over a dead edge until it ends.
	cli := func(args ...string) {
		t.Helper()
		if err := run(context.Background(), append(args, "--db", db), getenvFrom(nil), strings.NewReader(""), io.Discard, io.Discard); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	cli("regions", "set-status", "FRA1", "under_maintenance", "--until", "1h")
	waitFor("under_maintenance")
	edge.stop()
	base = failed()
	for failed()-base < 4 {
		if got := fra1(); got != "under_maintenance" {
			t.Fatalf("FRA1 is %s over its maintenance", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The maintenance is an incident of its own, open at once.
	incidents := func() []struct{ Component, Status, ResolvedAt string } {
		t.Helper()
		_, body := get(t, v, s.api+"/api/v1/status/incidents?limit=100")
		var list struct {
			Data []struct{ Component, Status, ResolvedAt string }
		}
		if err := json.Unmarshal(body, &list); err != nil {
			t.Fatal(err)
		}
		return list.Data
	}
	if l := incidents(); len(l) == 0 || l[0].Component != "Region FRA1" || l[0].Status != "under_maintenance" {
		t.Errorf("incidents %+v, want the maintenance of FRA1 first", l)
	}
	cli("regions", "set-status", "FRA1", "under_maintenance", "--until", "2s")
	waitFor("major_outage") // the maintenance ended, the edge is still down

	// The history: the outage and the slowness of FRA1 are its incidents,
	// and validate against the contract (above, in get); the maintenance
	// rose to the outage that followed it.
	seen := map[string]bool{}
	for _, inc := range incidents() {
		if inc.Component == "Region FRA1" {
			seen[inc.Status] = true
		}
	}
	for _, s := range []string{"major_outage", "degraded_performance"} {
		if !seen[s] {
			t.Errorf("no %s incident of Region FRA1", s)
		}
	}
}

// fra1Watch reads what a serve says of region FRA1: its status in
// GET /api/v1/regions, the failed probes of its edge counted on /metrics,
// and the /status page.
type fra1Watch struct {
	t *testing.T
	v *apitest.Validator
	s *server
}

func (w fra1Watch) status() string {
	w.t.Helper()
	_, body := get(w.t, w.v, w.s.edge+"/api/v1/regions")
	var list struct {
		Data []struct{ Code, Status string }
	}
	if err := json.Unmarshal(body, &list); err != nil {
		w.t.Fatal(err)
	}
	for _, r := range list.Data {
		if r.Code == "FRA1" {
			return r.Status
		}
	}
	w.t.Fatalf("no FRA1 in %s", body)
	return ""
}

func (w fra1Watch) failed() float64 {
	w.t.Helper()
	m, err := scrape(w.s.admin)
	if err != nil {
		w.t.Fatal(err)
	}
	return m[`cdnapi_probe_failures_total{component="region:FRA1"}`]
}

// waitFor waits up to 15 s for FRA1 to read status.
func (w fra1Watch) waitFor(status string) {
	w.t.Helper()
	for deadline := time.Now().Add(15 * time.Second); w.status() != status; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			w.t.Fatalf("FRA1 is %s, not %s, 15s on", w.status(), status)
		}
	}
}

func (w fra1Watch) page() string {
	w.t.Helper()
	res, err := http.Get(w.s.api + "/status")
	if err != nil {
		w.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return string(b)
}
