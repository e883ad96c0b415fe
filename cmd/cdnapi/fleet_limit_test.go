package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/apitest"
	"github.com/cdnapi/cdnapi/internal/redistest"
)

// TestFleetRateLimit runs two cdnapi processes that share one Redis, with
// --rate-limit 10 --rate-burst 20: a burst of 100 requests split between
// them gets one bucket of 20 (plus what refills while it runs), not 40.
// Then it kills Redis: every request is still served, the API component
// reports degraded_performance, and once Redis is back, so is the limit.
// The Redis timeout is long so that a loaded test machine never fails a
// request open while Redis is up; a dead Redis refuses connections at once.
func TestFleetRateLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two processes and Redis")
	}
	srv := redistest.Start(t)
	db := "sqlite:" + filepath.Join(t.TempDir(), "fleet.db")
	mustRunCmd(t, "", "seed", "--files", "30", "--db", db)
	ps := startChildren(t, 2, "--db", db, "--rate-limit", "10", "--rate-burst", "20",
		"--rate-limit-redis", srv.URL, "--rate-limit-redis-timeout", "2s")
	v := apitest.NewValidator(t)

	// burst sends n requests alternately to the processes, as one client,
	// and returns how many were allowed and how many tokens could have
	// refilled meanwhile.
	burst := func(n int) (allowed, refill int) {
		t.Helper()
		start := time.Now()
		for i := range n {
			res, body, err := fetch(t, v, ps[i%2].edge+"/api/v1/regions")
			if err != nil {
				t.Fatalf("request %d: %v", i, err)
			}
			switch res.StatusCode {
			case http.StatusOK:
				allowed++
			case http.StatusTooManyRequests:
			default:
				t.Fatalf("request %d answered %d: %s", i, res.StatusCode, short(body))
			}
		}
		return allowed, int(math.Ceil(time.Since(start).Seconds() * 10))
	}
	allowed, refill := burst(100)
	t.Logf("Redis up: %d of 100 allowed (burst 20, up to %d refilled)", allowed, refill)
	if allowed < 20 || allowed > 20+refill {
		t.Fatalf("two processes allowed %d of 100, want 20 to %d: one bucket for the fleet", allowed, 20+refill)
	}

	srv.Stop()
	// A refusal Redis gave before it died stands until its retry time, at
	// most a token's interval (100ms here), outage or not: the bucket was
	// empty then.
	time.Sleep(200 * time.Millisecond)
	for i := range 100 {
		res, body, err := fetch(t, v, ps[i%2].edge+"/api/v1/regions")
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("request %d with Redis down: %v %v %s", i, err, res, short(body))
		}
	}
	for _, p := range ps {
		eventually(t, "API degraded while Redis is down", func() error { return wantAPI(t, v, p.api, cdnapi.StatusDegradedPerformance) })
	}

	srv.Restart()
	for _, p := range ps {
		eventually(t, "API operational once Redis is back", func() error { return wantAPI(t, v, p.api, cdnapi.StatusOperational) })
	}
	allowed, refill = burst(100)
	t.Logf("Redis back: %d of 100 allowed (up to %d refilled)", allowed, refill)
	if allowed < 20 || allowed > 20+refill {
		t.Errorf("after the outage %d of 100 allowed, want 20 to %d", allowed, 20+refill)
	}
	// The outage is counted (its log line, once per outage, is tested in
	// internal/ratelimit).
	for _, p := range ps {
		res, err := replicaClient.Get(p.admin + "/metrics")
		if err != nil {
			t.Fatalf("metrics: %v", err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		// At least: the status document the test polls meanwhile is limited
		// per address too, and was served unchecked while Redis was down.
		var n int
		if i := strings.Index(string(body), "\ncdnapi_rate_limit_unlimited_total "); i >= 0 {
			fmt.Sscan(string(body)[i+len("\ncdnapi_rate_limit_unlimited_total "):], &n)
		}
		if n < 50 {
			t.Errorf("process %s did not count its 50 requests served without a limit:\n%s", p.name,
				grepLines(string(body), "cdnapi_rate_limit"))
		}
	}
}

// wantAPI checks the API component's status in the status document.
func wantAPI(t *testing.T, v *apitest.Validator, api string, want cdnapi.Status) error {
	res, body, err := fetch(t, v, api+"/api/v1/status")
	if err != nil {
		return err
	}
	var doc struct {
		Components []struct {
			Name   string
			Status cdnapi.Status
		}
	}
	if res.StatusCode != http.StatusOK || json.Unmarshal(body, &doc) != nil {
		return fmt.Errorf("status = %d %s", res.StatusCode, short(body))
	}
	for _, c := range doc.Components {
		if c.Name == cdnapi.ComponentAPI && c.Status == want {
			return nil
		}
	}
	return fmt.Errorf("status shows %s", body)
}

// grepLines returns the lines of s that contain substr.
func grepLines(s, substr string) string {
	var out []string
	for line := range strings.Lines(s) {
		if strings.Contains(line, substr) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "")
}
