package main

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi/internal/nginx"
	"github.com/cdnapi/cdnapi/internal/nginxtest"
	"github.com/cdnapi/cdnapi/internal/syslogngtest"
)

// BenchmarkEdgeLag measures how long a request served by a real nginx edge
// takes to show up in GET /api/v1/assets, while edge FRA1 serves a steady
// load (EDGE_RATE requests/s, 5,000 by default) for EDGE_SECONDS (10) and
// its follower writes it to the same store. A second edge, IAD1, gets one
// probe request every 50 ms; each probe's delay is from its answer (nginx
// logs a request as it answers it) to the first page of
// /api/v1/assets?region=IAD1 that lists it, polled every 5 ms. Both
// followers and serve run as `cdnapi follow` and `cdnapi serve` do, in this
// process; serve's page cache keeps EDGE_PAGE_CACHE_TTL (its default, 250ms,
// unless set).
//
//	go test -run '^$' -bench EdgeLag -benchtime 1x ./cmd/cdnapi/
//
// Reported: the p50 and p99 of the probes' delays, the rate achieved, and
// the CPU used by this process, by FRA1's nginx and left idle, in cores.
// With EDGE_LOAD=wrk, wrk drives FRA1 instead of the Go client, paced
// to EDGE_RATE, or as fast as it can with EDGE_RATE=0: what this machine
// can push through nginx beside the followers and serve.
//
// With EDGE_SHIP=syslog-ng, no follower runs: each edge's log is shipped
// by a real syslog-ng, configured by deploy/syslog-ng/cdnapi-edge.conf,
// to serve's ingest address with an edge key of its region, so the delay
// counts the shipper's batching (batch-timeout 500 ms) and the HTTP batch.
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
	ttl := os.Getenv("EDGE_PAGE_CACHE_TTL")
	if ttl == "" {
		ttl = "250ms" // serve's default
	}
	var srv *server
	if os.Getenv("EDGE_SHIP") == "syslog-ng" {
		syslogngtest.Require(b)
		ingestAddr := freeAddr(t)
		// The keys before serve, whose first load of the keys holds them.
		fraKey := newProjectKey(t, db, "--scope", "edge", "--region", "FRA1")
		iadKey := newProjectKey(t, db, "--scope", "edge", "--region", "IAD1")
		srv = startServe(t, nil, "--db", db, "--page-cache-ttl", ttl, "--ingest-addr", ingestAddr)
		startEdgeShipper(t, fra.LogPath(), ingestAddr, fraKey)
		startEdgeShipper(t, iad.LogPath(), ingestAddr, iadKey)
	} else {
		followInProcess(t, "--db", db, fra.LogPath())
		followInProcess(t, "--db", db, iad.LogPath())
		srv = startServe(t, nil, "--db", db, "--page-cache-ttl", ttl)
	}

	stop := make(chan struct{})
	var sent atomic.Int64
	var wg sync.WaitGroup
	cpu0 := sampleCPU(fra)
	start := time.Now()
	const workers = 64
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
	every := time.Duration(workers) * time.Second / time.Duration(rate)
	wrkRate := make(chan float64, 1)
	if os.Getenv("EDGE_LOAD") == "wrk" {
		// As fast as wrk goes: what the machine can push through nginx.
		wg.Go(func() { wrkRate <- runWrk(b, fra.URL()+"/f/7.bin", rate, seconds) })
	}
	for w := range workers {
		if os.Getenv("EDGE_LOAD") == "wrk" {
			break
		}
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
	cpu := sampleCPU(fra).since(cpu0, elapsed)
	close(stop)
	wg.Wait()
	select {
	case r := <-wrkRate:
		sent.Store(int64(r * elapsed.Seconds()))
	default:
	}
	slices.Sort(delays)
	pct := func(p float64) float64 {
		return float64(delays[int(p*float64(len(delays)-1))]) / float64(time.Millisecond)
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(sent.Load())/elapsed.Seconds(), "load-req/s")
	b.ReportMetric(float64(len(delays)), "probes")
	// Where the CPU went, in cores: this process (the load generator,
	// both followers and serve), the nginx of FRA1 (master and workers),
	// and what the machine had left idle of all its cores.
	b.ReportMetric(cpu.self, "self-cores")
	b.ReportMetric(cpu.nginx, "nginx-cores")
	b.ReportMetric(cpu.idle, "idle-cores")
}

// cpuSample is CPU time used so far, in seconds.
type cpuSample struct{ self, nginx, idle float64 }

// sampleCPU reads this process's CPU time, that of edge's nginx processes
// and the machine's idle time, from /proc.
func sampleCPU(edge *nginx.Server) cpuSample {
	var s cpuSample
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		s.self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	}
	const tick = 100.0 // USER_HZ
	if b, err := os.ReadFile(filepath.Join(edge.Dir(), "nginx.pid")); err == nil {
		master := strings.TrimSpace(string(b))
		dirs, _ := os.ReadDir("/proc")
		for _, d := range dirs {
			f := procStat(d.Name())
			if len(f) > 14 && (d.Name() == master || f[3] == master) {
				u, _ := strconv.ParseFloat(f[13], 64)
				k, _ := strconv.ParseFloat(f[14], 64)
				s.nginx += (u + k) / tick
			}
		}
	}
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		f := strings.Fields(strings.SplitN(string(b), "\n", 2)[0])
		if len(f) > 5 {
			idle, _ := strconv.ParseFloat(f[4], 64)
			iowait, _ := strconv.ParseFloat(f[5], 64)
			s.idle = (idle + iowait) / tick
		}
	}
	return s
}

// procStat returns the fields of /proc/PID/stat after the command name.
func procStat(pid string) []string {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return nil
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return nil
	}
	// Numbered as in proc(5): [0] pid, [1] comm, [2] state, [3] ppid …
	return append([]string{pid, ""}, strings.Fields(string(b[i+1:]))...)
}

// since is the cores used between s0 and s over elapsed.
func (s cpuSample) since(s0 cpuSample, elapsed time.Duration) cpuSample {
	e := elapsed.Seconds()
	return cpuSample{self: (s.self - s0.self) / e, nginx: (s.nginx - s0.nginx) / e, idle: (s.idle - s0.idle) / e}
}

// runWrk runs wrk, one thread and 64 connections, against url for
// seconds, and returns the requests/s it reports. Each connection waits
// between its requests (wrk's delay(), in whole milliseconds) so that
// together they send about rate requests/s; with EDGE_RATE=0 they send as
// fast as they can.
func runWrk(b *testing.B, url string, rate, seconds int) float64 {
	const conns = 64
	args := []string{"-t1", "-c" + strconv.Itoa(conns), "-d" + strconv.Itoa(seconds) + "s"}
	if os.Getenv("EDGE_RATE") != "0" {
		script := filepath.Join(b.TempDir(), "pace.lua")
		lua := "function delay() return " + strconv.Itoa(conns*1000/rate) + " end\n"
		if err := os.WriteFile(script, []byte(lua), 0o644); err != nil {
			b.Fatal(err)
		}
		args = append(args, "-s", script)
	}
	out, err := exec.Command("wrk", append(args, url)...).CombinedOutput()
	if err != nil {
		b.Errorf("wrk: %v\n%s", err, out)
		return 0
	}
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "Requests/sec:" {
			r, _ := strconv.ParseFloat(f[1], 64)
			return r
		}
	}
	b.Errorf("wrk said no Requests/sec:\n%s", out)
	return 0
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
