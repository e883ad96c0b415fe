package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestDrainCutsNothing puts keep-alive load on a running serve and stops it,
// with and without --shutdown-delay. The load generator speaks HTTP/1.1 on
// raw connections and never retries, so a request that the drain cuts shows
// as a failed read. Each worker behaves as a load balancer's connection
// does: it reuses its connection until an answer carries Connection: close,
// and then stops sending to this process.
func TestDrainCutsNothing(t *testing.T) {
	for _, delay := range []string{"0s", "1s"} {
		t.Run("shutdown-delay="+delay, func(t *testing.T) {
			db := "sqlite:" + filepath.Join(t.TempDir(), "drain.db")
			s := startServe(t, nil, "--db", db, "--demo", "--shutdown-delay", delay)
			addr := strings.TrimPrefix(s.api, "http://")

			const workers = 32
			var (
				ok, closed, cut atomic.Int64
				answered        atomic.Int64 // workers that have had their first answer
				stopAt          atomic.Int64 // unix nanos of the start of the drain
				wg              sync.WaitGroup
				firstErr        atomic.Value
			)
			for range workers {
				wg.Go(func() {
					conn, err := net.Dial("tcp", addr)
					if err != nil {
						firstErr.CompareAndSwap(nil, err)
						cut.Add(1)
						return
					}
					defer conn.Close()
					br := bufio.NewReader(conn)
					for n := 0; ; n++ {
						if _, err := io.WriteString(conn, "GET /api/v1/files?limit=5 HTTP/1.1\r\nHost: cdnapi\r\n\r\n"); err != nil {
							firstErr.CompareAndSwap(nil, fmt.Errorf("write %d: %w", n, err))
							cut.Add(1)
							return
						}
						res, err := http.ReadResponse(br, nil)
						if err == nil {
							_, err = io.Copy(io.Discard, res.Body)
							res.Body.Close()
						}
						if err != nil || res.StatusCode != http.StatusOK {
							firstErr.CompareAndSwap(nil, fmt.Errorf("request %d: %v", n, err))
							cut.Add(1)
							return
						}
						ok.Add(1)
						if n == 0 {
							answered.Add(1)
						}
						if res.Close {
							closed.Add(1)
							return
						}
						if at := stopAt.Load(); at != 0 && time.Since(time.Unix(0, at)) > 200*time.Millisecond {
							// An answer well after the drain began, without
							// Connection: close.
							firstErr.CompareAndSwap(nil, fmt.Errorf("request %d kept alive during the drain", n))
							cut.Add(1)
							return
						}
					}
				})
			}
			// Every worker busy on its connection: each has had an answer
			// (awaited, not slept for, so that a loaded machine cannot
			// start the drain before the last worker connects).
			for deadline := time.Now().Add(30 * time.Second); answered.Load() < workers; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%d of %d workers answered in 30s; want all before the drain", answered.Load(), workers)
				}
			}
			before := ok.Load()
			stopAt.Store(time.Now().UnixNano())
			if err := s.stop(); err != nil {
				t.Fatal(err)
			}
			wg.Wait()
			if cut.Load() != 0 {
				t.Fatalf("%d of %d workers lost a request; first: %v", cut.Load(), workers, firstErr.Load())
			}
			if before < workers || closed.Load() != workers {
				t.Fatalf("%d answers before the drain, %d connections asked to close; want ≥ %d and %d",
					before, closed.Load(), workers, workers)
			}
		})
	}
}

// TestServeStopsItsEvaluator stops serve in the middle of its status
// rounds, many times, and checks that once serve has returned no status
// evaluator of it is still running: the caller closes the store next, and a
// probe still under way would open the database file after the store's
// Close (a test's temporary directory was found not empty at its removal).
func TestServeStopsItsEvaluator(t *testing.T) {
	db := filepath.Join(t.TempDir(), "cdnapi.db")
	evaluators := func() int {
		buf := make([]byte, 1<<20)
		return strings.Count(string(buf[:runtime.Stack(buf, true)]), "health.(*Evaluator).Run(")
	}
	for i := range 10 {
		s := startServe(t, nil, "--db", db, "--demo", "--status-interval", "1ms")
		// Stop at a different point of the rounds each time.
		time.Sleep(time.Duration(i%5) * time.Millisecond)
		if err := s.stop(); err != nil {
			t.Fatal(err)
		}
		if n := evaluators(); n > 0 {
			t.Fatalf("stop %d: %d status evaluators still run after serve returned", i, n)
		}
	}
}
