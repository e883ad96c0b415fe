package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi/internal/follow"
	"github.com/cdnapi/cdnapi/internal/httpapi"
)

// The tests of this file run serve with its ingest listener, and send it
// edges' log lines over HTTP as a shipper does.

// edgeLogLine is a line of deploy/nginx/cdnapi-log.conf: request i of
// region, a GET answered 200.
func edgeLogLine(i int, region string) string {
	return fmt.Sprintf(`{"request_id":"%032x","msec":%d.%03d,"region":"%s","request_method":"GET","uri":"/f/%d.bin","status":200,"body_bytes_sent":%d,"upstream_cache_status":"MISS"}`,
		i, time.Now().Unix(), i%1000, region, i, 100+i)
}

// postEdgeLogs POSTs body to the ingest listener at base with key and
// returns the status and the body of the answer.
func postEdgeLogs(t *testing.T, base, key, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/api/v1/edge-logs", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// newProjectKey makes a key with keys create and returns it.
func newProjectKey(t testing.TB, db string, args ...string) string {
	t.Helper()
	out, _ := mustRunCmd(t, "", append([]string{"keys", "create", "--project", "alpha", "--quiet", "--db", db}, args...)...)
	return strings.TrimSpace(out)
}

// TestIngestEdgeLogsEndToEnd runs serve with --ingest-addr on each engine:
// an edge key of FRA1 sends a batch twice, and its FRA1 lines are listed
// once; its SIN1 line is rejected, counted and never listed; no key gets
// 401, a read key 403; the metrics count by region, and the error and
// line counters of each region the store knows exist at 0 before any
// batch, so that alerts on them need no `or vector(0)`.
func TestIngestEdgeLogsEndToEnd(t *testing.T) {
	for _, engine := range edgeEngines {
		t.Run(engine.name, func(t *testing.T) {
			db := engine.dsn(t)
			mustRunCmd(t, demoRegionsNDJSON(t), "ingest", "regions", "--db", db)
			edgeKey := newProjectKey(t, db, "--scope", "edge", "--region", "FRA1")
			readKey := newProjectKey(t, db)
			ingestAddr := freeAddr(t)
			srv := startServe(t, nil, "--db", db, "--ingest-addr", ingestAddr)
			base := "http://" + ingestAddr

			s, err := scrape(srv.admin)
			if err != nil {
				t.Fatal(err)
			}
			for _, region := range []string{"FRA1", "SIN1"} {
				atZero := []string{fmt.Sprintf(`cdnapi_edgelog_store_errors_total{region="%s"}`, region)}
				for _, result := range []string{"taken", "skipped", "rejected", "other_region"} {
					atZero = append(atZero, fmt.Sprintf(`cdnapi_edgelog_lines_total{region="%s",result="%s"}`, region, result))
				}
				for _, metric := range atZero {
					if v, ok := s[metric]; !ok || v != 0 {
						t.Errorf("before any batch, %s = %v (present: %v), want 0", metric, v, ok)
					}
				}
			}

			batch := edgeLogLine(1, "FRA1") + "\n" + edgeLogLine(2, "SIN1") + "\n" +
				strings.Replace(edgeLogLine(3, "FRA1"), `"msec":`, `"remote_addr":"192.0.2.7","msec":`, 1) + "\n"
			for round := range 2 {
				status, body := postEdgeLogs(t, base, edgeKey, batch)
				if status != 200 {
					t.Fatalf("round %d: %d %s", round, status, body)
				}
				var a struct {
					Taken, Rejected int
					Other           int `json:"rejected_other_region"`
				}
				if err := json.Unmarshal([]byte(body), &a); err != nil || a.Taken != 2 || a.Rejected != 1 || a.Other != 1 {
					t.Errorf("round %d: %s, want 2 taken and SIN1's line rejected", round, body)
				}
			}
			if status, body := postEdgeLogs(t, base, "", batch); status != 401 {
				t.Errorf("no key: %d %s, want 401", status, body)
			}
			if status, body := postEdgeLogs(t, base, readKey, batch); status != 403 || !strings.Contains(body, "permission_denied") {
				t.Errorf("read key: %d %s, want 403", status, body)
			}

			got := waitForAssets(t, srv.edge+"/api/v1/assets?limit=100", []string{fmt.Sprintf("%032x", 1), fmt.Sprintf("%032x", 3)})
			if len(got) != 2 {
				t.Errorf("assets listed: %v, want FRA1's two requests once each", got)
			}
			resp, err := http.Get(srv.edge + "/api/v1/assets?region=SIN1")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(b), fmt.Sprintf("%032x", 2)) {
				t.Errorf("SIN1's line sent with FRA1's key is listed: %s", b)
			}
			s, err = scrape(srv.admin)
			if err != nil {
				t.Fatal(err)
			}
			for metric, want := range map[string]float64{
				`cdnapi_edgelog_lines_total{region="FRA1",result="taken"}`:        4,
				`cdnapi_edgelog_lines_total{region="FRA1",result="other_region"}`: 2,
				`cdnapi_edgelog_batches_total{region="FRA1"}`:                     2,
			} {
				if s[metric] != want {
					t.Errorf("%s = %v, want %v", metric, s[metric], want)
				}
			}
		})
	}
}

// TestFollowOnceCombined: follow --once of a log in nginx's combined
// format fails, saying in one line what cdnapi reads and where.
func TestFollowOnceCombined(t *testing.T) {
	db := migratedDB(t, "combined.db")
	mustRunCmd(t, demoRegionsNDJSON(t), "ingest", "regions", "--db", db)
	log := filepath.Join(t.TempDir(), "access.log")
	combined := `192.0.2.1 - - [25/Nov/2025:12:03:07 +0000] "GET /a HTTP/1.1" 200 5 "-" "curl/8.5.0"` + "\n"
	if err := os.WriteFile(log, []byte(strings.Repeat(combined, 3)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := runCmd(t, "", "follow", "--once", "--db", db, log)
	if !errors.Is(err, follow.ErrAllRejected) || strings.Contains(err.Error(), "\n") ||
		!strings.Contains(err.Error(), "combined") || !strings.Contains(err.Error(), "deploy/nginx/cdnapi-log.conf") {
		t.Errorf("follow --once of a combined log: %v", err)
	}
}

// TestIngestRejectsBounded: what edges send decides what lands in
// --ingest-rejects, so serve bounds the file as follow bounds --rejects.
// Two batches of 1.2 MB of invalid lines each through the ingest address
// leave at most 1 MiB in the file and 1 MiB in FILE.1, every line whole
// (a batch's lines past the bound are not cut), and the newest batch's
// lines kept.
func TestIngestRejectsBounded(t *testing.T) {
	db := migratedDB(t, "rejects.db")
	mustRunCmd(t, demoRegionsNDJSON(t), "ingest", "regions", "--db", db)
	key := newProjectKey(t, db, "--scope", "edge", "--region", "FRA1")
	rejects := filepath.Join(t.TempDir(), "rejects.ndjson")
	ingestAddr := freeAddr(t)
	startServe(t, nil, "--db", db, "--ingest-addr", ingestAddr, "--ingest-rejects", rejects, "--ingest-rejects-max-mib", "1")

	// Two batches of twenty invalid lines of 60,000 bytes, each its own.
	sent := map[string]bool{}
	var last []string
	for b := range 2 {
		var batch strings.Builder
		last = last[:0]
		for i := range 20 {
			line := fmt.Sprintf(`{"batch":%d,"line":%d,"junk":"%s"}`, b, i, strings.Repeat("x", 60_000))
			sent[line], last = true, append(last, line)
			batch.WriteString(line + "\n")
		}
		status, body := postEdgeLogs(t, "http://"+ingestAddr, key, batch.String())
		if status != 200 || !strings.Contains(body, `"rejected":20`) {
			t.Fatalf("batch %d: %d %s", b, status, body)
		}
	}

	kept := map[string]bool{}
	for _, name := range []string{rejects, rejects + ".1"} {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) > 1<<20 {
			t.Errorf("%s holds %d bytes, past the 1 MiB bound", name, len(data))
		}
		if len(data) == 0 || data[len(data)-1] != '\n' {
			t.Errorf("%s does not end with a whole line", name)
		}
		for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
			if !sent[line] {
				t.Errorf("%s holds a line that was not sent whole: %.80s…", name, line)
			}
			kept[line] = true
		}
	}
	for _, line := range last {
		if !kept[line] {
			t.Errorf("the newest batch's line %.40s… is not kept", line)
		}
	}
}

// TestIngestReadTimeout: the ingest address reads a batch within
// --ingest-read-timeout, not the other listeners' 10 s, and a batch still
// arriving when it runs out gets 503 body_incomplete, which shippers send
// again, with nothing of it taken.
func TestIngestReadTimeout(t *testing.T) {
	db := migratedDB(t, "edge.db")
	mustRunCmd(t, demoRegionsNDJSON(t), "ingest", "regions", "--db", db)
	edgeKey := newProjectKey(t, db, "--scope", "edge", "--region", "FRA1")
	ingestAddr := freeAddr(t)
	srv := startServe(t, nil, "--db", db, "--ingest-addr", ingestAddr, "--ingest-read-timeout", "300ms")

	c, err := net.Dial("tcp", ingestAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	line := edgeLogLine(1, "FRA1") + "\n"
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/x-ndjson\r\nContent-Length: %d\r\n\r\n%s",
		httpapi.EdgeLogsPath, ingestAddr, edgeKey, 2*len(line), line) // half of what it announced, then nothing
	c.SetReadDeadline(time.Now().Add(2 * time.Minute)) // a guard against a hang, not a measure
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer to a batch cut short: %v", err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(b), "body_incomplete") || res.Header.Get("Retry-After") == "" {
		t.Fatalf("a batch cut short by --ingest-read-timeout: %d %s (Retry-After %q), want 503 body_incomplete with Retry-After",
			res.StatusCode, b, res.Header.Get("Retry-After"))
	}
	resp, err := http.Get(srv.edge + "/api/v1/assets")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(b), fmt.Sprintf("%032x", 1)) {
		t.Errorf("a line of the batch cut short is listed: %s", b)
	}
}
