package follow_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/follow"
	"github.com/cdnapi/cdnapi/internal/pgtest"
	"github.com/cdnapi/cdnapi/internal/storetest"
	"github.com/cdnapi/cdnapi/internal/teststore"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// edge writes an access log as nginx does with deploy/nginx's log format:
// whole lines appended with O_APPEND, each request with an ID of its own.
type edge struct {
	t    *testing.T
	path string
	n    int // requests logged so far
}

func newEdge(t *testing.T, dir string) *edge {
	return &edge{t: t, path: filepath.Join(dir, "edge.log")}
}

// line returns the log line of request i.
func line(i int, status int) string {
	return fmt.Sprintf(`{"request_id":"%032x","msec":%d.%03d,"region":"FRA1","request_method":"GET","uri":"/f/%d.bin","status":%d,"body_bytes_sent":%d,"upstream_cache_status":"%s"}`,
		i, time.Now().Unix(), i%1000, i, status, 100+i, []string{"MISS", "HIT"}[i%2])
}

// log appends n requests answered 200.
func (e *edge) log(n int) {
	e.t.Helper()
	var b strings.Builder
	for range n {
		b.WriteString(line(e.n, 200))
		b.WriteByte('\n')
		e.n++
	}
	e.write(b.String())
}

// write appends raw bytes to the log.
func (e *edge) write(s string) {
	e.t.Helper()
	f, err := os.OpenFile(e.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		e.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		e.t.Fatal(err)
	}
}

// run starts a follower of e in the background; stop stops it and returns
// its error.
func run(t *testing.T, st follow.Store, cfg follow.Config) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- follow.Run(ctx, st, cfg) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				err = errors.New("the follower did not stop within 30 s")
			}
		})
		return err
	}
	t.Cleanup(func() { stop() })
	return stop
}

// fastConfig follows path with short intervals, for tests.
func fastConfig(path string) follow.Config {
	return follow.Config{Path: path, PollInterval: 10 * time.Millisecond, BatchInterval: 50 * time.Millisecond,
		RotateGrace: 100 * time.Millisecond}
}

// newStore returns a store with region FRA1 on engine.
func newStore(t *testing.T, engine teststore.Engine) cdnapi.Store {
	st := engine.Open(t)
	if err := storetest.Writer(st).PutRegions(context.Background(), []cdnapi.Region{
		{Code: "FRA1", Name: "Frankfurt", Zone: "eu-central", Country: "DE", Status: cdnapi.StatusOperational},
	}); err != nil {
		t.Fatal(err)
	}
	return st
}

// assetIDs returns the IDs of every asset, counting each time one is listed.
func assetIDs(t *testing.T, st cdnapi.Store) map[string]int {
	t.Helper()
	ids := map[string]int{}
	q := cdnapi.AssetQuery{Limit: 100}
	for {
		page, err := st.ListAssets(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range page {
			ids[a.ID]++
		}
		if len(page) < q.Limit {
			return ids
		}
		p := page[len(page)-1].Position()
		q.After = &p
	}
}

// waitFor polls until the store holds exactly want assets, or fails.
func waitFor(t *testing.T, st cdnapi.Store, want int) map[string]int {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ids := assetIDs(t, st)
		if len(ids) == want {
			return ids
		}
		if time.Now().After(deadline) {
			t.Fatalf("the store holds %d assets, want %d", len(ids), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkExactlyOnce checks that ids holds requests 0 to n-1, once each.
func checkExactlyOnce(t *testing.T, ids map[string]int, n int) {
	t.Helper()
	for i := range n {
		id := fmt.Sprintf("ast_%032x", i)
		if ids[id] != 1 {
			t.Errorf("request %d listed %d times, want once", i, ids[id])
		}
	}
	if len(ids) != n {
		t.Errorf("%d assets, want %d", len(ids), n)
	}
}

// position returns the committed position of the log at path.
func position(t *testing.T, st cdnapi.Store, path string) cdnapi.LogPosition {
	t.Helper()
	p, err := st.LogPosition(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFollow(t *testing.T) {
	for _, engine := range teststore.Engines {
		t.Run(engine.Name, func(t *testing.T) {
			t.Parallel()
			st := newStore(t, engine)
			e := newEdge(t, t.TempDir())
			e.log(3)
			stop := run(t, st, fastConfig(e.path))
			waitFor(t, st, 3)

			// A line written in two parts waits for its newline.
			l := line(e.n, 200)
			e.write(l[:40])
			time.Sleep(100 * time.Millisecond)
			if n := len(assetIDs(t, st)); n != 3 {
				t.Fatalf("a partly written line was committed: %d assets", n)
			}
			e.write(l[40:] + "\n")
			e.n++
			waitFor(t, st, 4)

			// Requests that are not listed advance the position without a row.
			e.write(line(e.n, 404) + "\n")
			e.n++
			e.log(2)
			ids := waitFor(t, st, 6)
			if ids[fmt.Sprintf("ast_%032x", 4)] != 0 {
				t.Error("a 404 was listed")
			}
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			abs, _ := filepath.Abs(e.path)
			p := position(t, st, abs)
			fi, _ := os.Stat(e.path)
			if p.Offset != fi.Size() || p.Lines != 7 || p.NewestAt.IsZero() {
				t.Errorf("position = %+v, want offset %d and 7 lines", p, fi.Size())
			}
		})
	}
}

// TestRotation follows a log through both kinds of rotation while it is
// written, and through each while the follower is stopped.
func TestRotation(t *testing.T) {
	rotations := []struct {
		name   string
		rotate func(t *testing.T, path string)
	}{
		{"rename and reopen", func(t *testing.T, path string) {
			if err := os.Rename(path, path+".1"); err != nil {
				t.Fatal(err)
			}
		}},
		{"copytruncate", func(t *testing.T, path string) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path+".1", data, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(path, 0); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, rot := range rotations {
		t.Run(rot.name, func(t *testing.T) {
			t.Parallel()
			st := newStore(t, teststore.Engines[0])
			e := newEdge(t, t.TempDir())
			e.log(50)

			// While it runs: the lines before and after the rotation.
			stop := run(t, st, fastConfig(e.path))
			waitFor(t, st, 50)
			e.log(30) // not yet read when the log rotates, most likely
			rot.rotate(t, e.path)
			e.log(20)
			checkExactlyOnce(t, waitFor(t, st, 100), 100)
			if err := stop(); err != nil {
				t.Fatal(err)
			}

			// While it is stopped: it finishes the rotated file first.
			os.Remove(e.path + ".1")
			e.log(10)
			rot.rotate(t, e.path)
			e.log(15)
			stop = run(t, st, fastConfig(e.path))
			checkExactlyOnce(t, waitFor(t, st, 125), 125)
			if err := stop(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestRestartsExactlyOnce stops the follower again and again while the
// log grows: every line is listed once.
func TestRestartsExactlyOnce(t *testing.T) {
	st := newStore(t, teststore.Engines[0])
	e := newEdge(t, t.TempDir())
	cfg := fastConfig(e.path)
	cfg.BatchLines = 7
	for range 10 {
		stop := run(t, st, cfg)
		for range 5 {
			e.log(13)
			time.Sleep(5 * time.Millisecond)
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	}
	stop := run(t, st, cfg)
	checkExactlyOnce(t, waitFor(t, st, e.n), e.n)
	stop()
}

func TestRejects(t *testing.T) {
	st := newStore(t, teststore.Engines[0])
	dir := t.TempDir()
	e := newEdge(t, dir)
	var rejects bytes.Buffer
	var mu sync.Mutex
	cfg := fastConfig(e.path)
	cfg.Rejects = writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return rejects.Write(p)
	})
	e.log(2)
	garbage := []string{"not json", `{"request_id":"x"}`, strings.Replace(line(99, 200), "FRA1", "ZZZ9", 1),
		"\x00\xff binary", strings.Repeat("a", 70<<10)}
	e.write(strings.Join(garbage, "\n") + "\n")
	e.log(2)
	stop := run(t, st, cfg)
	ids := waitFor(t, st, 4)
	if ids[fmt.Sprintf("ast_%032x", 99)] != 0 {
		t.Error("a line of an unknown region was listed")
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	got := strings.Split(strings.TrimSuffix(rejects.String(), "\n"), "\n")
	mu.Unlock()
	want := append(garbage[:4:4], strings.Repeat("a", 64<<10))
	if len(got) != len(want) {
		t.Fatalf("%d rejected lines, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("rejected line %d = %.60q, want %.60q", i, got[i], want[i])
		}
	}
	abs, _ := filepath.Abs(e.path)
	if p := position(t, st, abs); p.Lines != 9 {
		t.Errorf("position counts %d lines, want 9", p.Lines)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestSecondFollowerRefused: two followers of one file are refused, not
// raced.
func TestSecondFollowerRefused(t *testing.T) {
	st := newStore(t, teststore.Engines[0])
	e := newEdge(t, t.TempDir())
	e.log(5)
	run(t, st, fastConfig(e.path))
	waitFor(t, st, 5)
	cfg := fastConfig(e.path)
	cfg.Stream = "another"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := follow.Run(ctx, st, cfg)
	if !errors.Is(err, follow.ErrLocked) {
		t.Fatalf("a second follower: %v, want ErrLocked", err)
	}
}

// TestStopAtEnd is a backfill: it returns once the whole log is committed.
func TestStopAtEnd(t *testing.T) {
	st := newStore(t, teststore.Engines[0])
	e := newEdge(t, t.TempDir())
	e.log(12345)
	cfg := fastConfig(e.path)
	cfg.StopAtEnd = true
	// No deadline but the test binary's: a backfill on a loaded machine
	// may take minutes, and Run stopped by its context returns nil with
	// the log half read.
	if err := follow.Run(t.Context(), st, cfg); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, assetIDs(t, st), 12345)
}
