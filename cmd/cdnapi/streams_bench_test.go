package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkIdleStreams measures what idle status streams cost the server
// (issue 36: 500 of them cost 7–8% of a core): `cdnapi serve` runs as a
// child process, with its default --status-interval and heartbeat, and
// its CPU time (from /proc) is read over a window with no stream open and
// then over one with idleStreams open over loopback, each having received
// its first event. Nothing changes meanwhile, so no event is sent: what is
// left is the cost of streams waiting. It is CPU time, not latency, so a
// loaded machine moves it less:
//
//	go test ./cmd/cdnapi -run '^$' -bench BenchmarkIdleStreams -benchtime 1x
func BenchmarkIdleStreams(b *testing.B) {
	const (
		idleStreams = 500
		window      = 10 * time.Second
	)
	db := "sqlite:" + filepath.Join(b.TempDir(), "streams.db")
	// The flags after startChildren's win: the default evaluation
	// interval, and one client address may hold every stream.
	s := startChildren(b, 1, "--db", db, "--status-interval", "5s",
		"--stream-max-per-client", strconv.Itoa(idleStreams))[0]
	pid := strconv.Itoa(s.cmd.Process.Pid)

	for range b.N {
		none := serverCores(b, pid, window)
		openIdleStreams(b, s.api, idleStreams)
		open := serverCores(b, pid, window)
		b.ReportMetric(none, "cores-no-stream")
		b.ReportMetric(open, "cores-500-streams")
		b.ReportMetric(open-none, "cores-added")
		b.Logf("serve used %.4f of a core with no stream open, %.4f with %d idle streams", none, open, idleStreams)
	}
}

// serverCores is the CPU time (user and system) the process pid uses over
// window, in cores.
func serverCores(b *testing.B, pid string, window time.Duration) float64 {
	b.Helper()
	cpu := func() float64 {
		f := procStat(pid)
		if len(f) < 15 {
			b.Fatalf("cannot read /proc/%s/stat", pid)
		}
		u, _ := strconv.ParseFloat(f[13], 64)
		k, _ := strconv.ParseFloat(f[14], 64)
		return (u + k) / 100 // USER_HZ
	}
	start, t0 := cpu(), time.Now()
	time.Sleep(window) // the measurement's window, not a wait for an event
	return (cpu() - start) / time.Since(t0).Seconds()
}

// openIdleStreams opens n status streams on api and returns once each has
// received its first event; they stay open, each read by a goroutine,
// until the benchmark ends.
func openIdleStreams(b *testing.B, api string, n int) {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	client := &http.Client{Transport: &http.Transport{}}
	var readers sync.WaitGroup
	b.Cleanup(func() { cancel(); readers.Wait() })
	errs := make(chan error, n)
	for range n {
		readers.Go(func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, api+"/api/v1/status/stream", nil)
			res, err := client.Do(req)
			if err != nil {
				errs <- err
				return
			}
			defer res.Body.Close()
			if res.StatusCode != http.StatusOK {
				errs <- fmt.Errorf("HTTP %d", res.StatusCode)
				return
			}
			sc := bufio.NewScanner(res.Body)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				if strings.HasPrefix(sc.Text(), "data: ") {
					break
				}
			}
			if !strings.HasPrefix(sc.Text(), "data: ") {
				errs <- fmt.Errorf("the stream ended before its first event: %v", sc.Err())
				return
			}
			errs <- nil
			for sc.Scan() { // heartbeats, until the benchmark ends
			}
		})
	}
	for range n {
		if err := <-errs; err != nil {
			b.Fatalf("a stream did not open: %v", err)
		}
	}
}
