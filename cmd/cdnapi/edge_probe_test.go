package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi/internal/apitest"
	"github.com/cdnapi/cdnapi/internal/nginx"
	"github.com/cdnapi/cdnapi/internal/nginxtest"
)

// TestRealEdgeStopped probes a real nginx edge's /health from serve: when
// nginx stops, its region reads major_outage in GET /api/v1/regions and on
// /status by the second failed probe round, with an incident of its own;
// when nginx starts again, the region is operational in both. (The
// damping, slow answers, flapping and operators' statuses are tested
// against an edge in Go that can do them on demand: TestServeRegionProbes.)
func TestRealEdgeStopped(t *testing.T) {
	nginxtest.Require(t)
	for _, engine := range edgeEngines {
		t.Run(engine.name, func(t *testing.T) {
			origin := nginxtest.StartOrigin(t, t.TempDir())
			edge := nginxtest.StartEdge(t, nginx.Edge{Region: "FRA1", Origin: origin.URL()})
			db := engine.dsn(t)
			mustRunCmd(t, demoRegionsNDJSON(t), "ingest", "regions", "--db", db)
			s := startServe(t, nil, "--db", db, "--region-probe", "FRA1="+edge.HealthURL())
			v := apitest.NewValidator(t)
			w := fra1Watch{t: t, v: v, s: s}
			fra1, failed, waitFor, statusPage := w.status, w.failed, w.waitFor, w.page

			waitFor("operational")
			if f := failed(); f != 0 {
				t.Fatalf("%v failed probes of a running nginx edge", f)
			}

			// Counted in rounds, not time, as in TestServeRegionProbes: once
			// two failed rounds are counted, every answer must say
			// major_outage.
			if err := edge.Stop(); err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				n := failed()
				status := fra1()
				if status == "major_outage" {
					t.Logf("FRA1 read major_outage after %v failed rounds", n)
					break
				}
				if n >= 2 {
					t.Fatalf("FRA1 is %s after %v failed rounds of a stopped nginx, want major_outage from the second", status, n)
				}
				if time.Now().After(deadline) {
					t.Fatalf("FRA1 is %s 15s after its nginx stopped", status)
				}
			}
			if page := statusPage(); !strings.Contains(page, `FRA1</span></span><span class="t-major_outage">Major outage</span>`) {
				t.Errorf("/status does not show FRA1 in major outage")
			}

			if err := edge.Start(); err != nil {
				t.Fatal(err)
			}
			waitFor("operational")
			if page := statusPage(); !strings.Contains(page, `FRA1</span></span><span class="t-operational">Operational</span>`) {
				t.Errorf("/status does not show FRA1 operational again")
			}

			// The outage is in the history, resolved (written by the round
			// that measured it, so polled for).
			resolved := func() bool {
				_, body := get(t, v, s.api+"/api/v1/status/incidents?limit=100")
				var incidents struct {
					Data []struct {
						Component, Status string
						ResolvedAt        *string `json:"resolved_at"`
					}
				}
				if err := json.Unmarshal(body, &incidents); err != nil {
					t.Fatal(err)
				}
				for _, inc := range incidents.Data {
					if inc.Component == "Region FRA1" && inc.Status == "major_outage" && inc.ResolvedAt != nil {
						return true
					}
				}
				return false
			}
			for deadline := time.Now().Add(5 * time.Second); !resolved(); time.Sleep(50 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("no resolved major_outage incident of Region FRA1 5s after it is operational again")
				}
			}
		})
	}
}
