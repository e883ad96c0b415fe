package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkEdgeIngest compares the ingest address with `cdnapi follow` on
// the same lines, on each engine: EDGE_INGEST_LINES (default 200,000)
// nginx lines with random request IDs, as $request_id is, either POSTed to
// a real serve's ingest listener in batches of EDGE_INGEST_BATCH lines
// (default 20,000, the batch-lines of deploy/syslog-ng/cdnapi-edge.conf),
// gzip-encoded when EDGE_INGEST_GZIP=1, by EDGE_INGEST_SENDERS senders at
// once (default 2, as its workers), or read from a file by
// `cdnapi follow --once`. Each starts from an empty database with the
// regions; the two run in turns, and the benchmark reports each one's
// lines/s and the ratio endpoint/follow (the goal: 0.8 or more).
//
//	scripts/bench-edge-ingest, or
//	go test -run '^$' -bench EdgeIngest -benchtime 2x ./cmd/cdnapi/
func BenchmarkEdgeIngest(b *testing.B) {
	n := envInt("EDGE_INGEST_LINES", 200_000)
	batch := envInt("EDGE_INGEST_BATCH", 20_000)
	senders := envInt("EDGE_INGEST_SENDERS", 2)
	gz := os.Getenv("EDGE_INGEST_GZIP") == "1"
	var log bytes.Buffer
	start := time.Now().Add(-time.Duration(n) * time.Second / 5000).UnixMilli()
	for i := range n {
		id := fmt.Sprintf("%x", sha256.Sum256(fmt.Appendf(nil, "%d", i)))[:32]
		msec := start + int64(i/5)
		fmt.Fprintf(&log, `{"request_id":"%s","msec":%d.%03d,"region":"FRA1","request_method":"GET","uri":"/f/%d.bin","status":200,"body_bytes_sent":%d,"upstream_cache_status":"%s"}`+"\n",
			id, msec/1000, msec%1000, i, 100+i, []string{"MISS", "HIT"}[i%2])
	}
	logPath := filepath.Join(b.TempDir(), "edge.log")
	if err := os.WriteFile(logPath, log.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	var bodies [][]byte
	lines := bytes.SplitAfter(log.Bytes(), []byte("\n"))
	for i := 0; i < n; i += batch {
		body := bytes.Join(lines[i:min(i+batch, n)], nil)
		if gz {
			var buf bytes.Buffer
			zw := gzip.NewWriter(&buf)
			zw.Write(body)
			zw.Close()
			body = buf.Bytes()
		}
		bodies = append(bodies, body)
	}

	for _, engine := range edgeEngines {
		b.Run(engine.name, func(b *testing.B) {
			var endpointTime, followTime time.Duration
			runEndpoint := func() {
				db := engine.dsn(b)
				mustRunCmd(b, demoRegionsNDJSON(b), "ingest", "regions", "--db", db)
				key := newProjectKey(b, db, "--scope", "edge", "--region", "FRA1")
				addr := freeAddr(b)
				srv := startServe(b, nil, "--db", db, "--ingest-addr", addr)
				c := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: senders}}
				next := make(chan []byte)
				var wg sync.WaitGroup
				t0 := time.Now()
				for range senders {
					wg.Go(func() {
						for body := range next {
							if err := postBatch(c, "http://"+addr, key, body, gz); err != nil {
								b.Error(err)
							}
						}
					})
				}
				for _, body := range bodies {
					next <- body
				}
				close(next)
				wg.Wait()
				endpointTime += time.Since(t0)
				srv.stop()
				if got := len(storedAssetIDs(b, db)); got != n {
					b.Fatalf("the endpoint stored %d assets, want %d", got, n)
				}
			}
			runFollow := func() {
				db := engine.dsn(b)
				mustRunCmd(b, demoRegionsNDJSON(b), "ingest", "regions", "--db", db)
				t0 := time.Now()
				mustRunCmd(b, "", "follow", "--once", "--log-level", "warn", "--db", db, logPath)
				followTime += time.Since(t0)
			}
			i := 0
			for b.Loop() {
				if i%2 == 0 {
					runEndpoint()
					runFollow()
				} else {
					runFollow()
					runEndpoint()
				}
				i++
			}
			b.ReportMetric(float64(n*i)/endpointTime.Seconds(), "endpoint-lines/s")
			b.ReportMetric(float64(n*i)/followTime.Seconds(), "follow-lines/s")
			b.ReportMetric(followTime.Seconds()/endpointTime.Seconds(), "endpoint/follow")
		})
	}
}

// postBatch POSTs one batch and checks that all of it was taken.
func postBatch(c *http.Client, base, key string, body []byte, gz bool) error {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, base+"/api/v1/edge-logs", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if gz {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	var a struct{ Lines, Taken int }
	if resp.StatusCode != 200 || json.Unmarshal(out, &a) != nil || a.Taken != a.Lines {
		return fmt.Errorf("batch: %d %s", resp.StatusCode, strings.TrimSpace(string(out)))
	}
	return nil
}
