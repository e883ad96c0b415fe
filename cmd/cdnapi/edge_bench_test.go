package main

import (
	"encoding/json"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi/internal/nginx"
	"github.com/cdnapi/cdnapi/internal/nginxtest"
)

// BenchmarkEdgeLag measures how long a request served by a real nginx edge
// takes to show up in GET /api/v1/assets, while edge FRA1 serves a steady
// load (EDGE_RATE requests/s, 5,000 by default) for EDGE_SECONDS (10) and
// its follower writes it to the same store. A second edge, IAD1, gets one
// probe request every 50 ms; each probe's delay is from its answer (nginx
// logs a request as it answers it) to the first page of
// /api/v1/assets?region=IAD1 that lists it, polled every 5 ms. Both
// followers and serve run as `cdnapi follow` and `cdnapi serve` do, in this
// process; serve's page cache keeps EDGE_PAGE_CACHE_TTL (its default, 1s,
// unless set).
//
//	go test -run '^$' -bench EdgeLag -benchtime 1x ./cmd/cdnapi/
//
// Reported: the p50 and p99 of the probes' delays, and the rate achieved.
func BenchmarkEdgeLag(b *testing.B) {
	for _, engine := range edgeEngines {
		b.Run(engine.name, func(b *testing.B) {
			for b.Loop() {
				benchEdgeLag(b, engine.dsn)
			}
		})
	}
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

func benchEdgeLag(b *testing.B, dsnFor func(t testing.TB) string) {
	rate, seconds := envInt("EDGE_RATE", 5000), envInt("EDGE_SECONDS", 10)
	nginxtest.Require(b)
	t := b
	origin, fra, _ := cdnOnLoopback(t, 200)
	iad := nginxtest.StartEdge(b, nginx.Edge{Region: "IAD1", Origin: origin.URL()})
	db := dsnFor(t)
	mustRunCmd(t, demoRegionsNDJSON(t), "ingest", "regions", "--db", db)
	followInProcess(t, "--db", db, fra.LogPath())
	followInProcess(t, "--db", db, iad.LogPath())
	ttl := os.Getenv("EDGE_PAGE_CACHE_TTL")
	if ttl == "" {
		ttl = "1s"
	}
	srv := startServe(t, nil, "--db", db, "--page-cache-ttl", ttl)

	stop := make(chan struct{})
	var sent atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	const workers = 64
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
	every := time.Duration(workers) * time.Second / time.Duration(rate)
	for w := range workers {
		wg.Go(func() {
			next := start.Add(time.Duration(w) * time.Second / time.Duration(rate))
			for i := w; ; i += workers {
				select {
				case <-stop:
					return
				case <-time.After(time.Until(next)):
				}
				next = next.Add(every)
				if _, _, _, err := edgeGet(client, fra.URL(), "/f/"+strconv.Itoa(i%200)+".bin"); err == nil {
					sent.Add(1)
				}
			}
		})
	}

	var delays []time.Duration
	probe := &http.Client{Timeout: 10 * time.Second}
	for time.Since(start) < time.Duration(seconds)*time.Second {
		id, _, _, err := edgeGet(probe, iad.URL(), "/f/7.bin")
		if err != nil {
			b.Fatal(err)
		}
		answered := time.Now()
		for {
			if listedNow(probe, srv.edge+"/api/v1/assets?region=IAD1&limit=20", "ast_"+id) {
				delays = append(delays, time.Since(answered))
				break
			}
			if time.Since(answered) > 10*time.Second {
				b.Fatalf("probe %s not listed within 10 s", id)
			}
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(50 * time.Millisecond)
	}
	elapsed := time.Since(start)
	close(stop)
	wg.Wait()
	slices.Sort(delays)
	pct := func(p float64) float64 {
		return float64(delays[int(p*float64(len(delays)-1))]) / float64(time.Millisecond)
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(sent.Load())/elapsed.Seconds(), "load-req/s")
	b.ReportMetric(float64(len(delays)), "probes")
}

// listedNow reports whether the page at url lists the asset id.
func listedNow(c *http.Client, url, id string) bool {
	resp, err := c.Get(url)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var page struct{ Data []listedAsset }
	if json.NewDecoder(resp.Body).Decode(&page) != nil {
		return false
	}
	for _, a := range page.Data {
		if a.ID == id {
			return true
		}
	}
	return false
}
