package follow_test

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cdnapi/cdnapi/internal/follow"
	"github.com/cdnapi/cdnapi/internal/teststore"
)

// TestNginxRefusalsSkipped is issue 36's: nginx answers a request it
// cannot read (400 for a bad request line, 414 for a URI too long) before
// the server block sets $cdnapi_region, so its line has no region. Any
// scanner wrote such lines, each counted as rejected, which fires a rejects
// alert. They are valid lines of nginx's own making: skipped, counted
// under the reason nginx_refused, and not written to the rejects file. A
// line without a region that nginx did not refuse is still rejected.
func TestNginxRefusalsSkipped(t *testing.T) {
	st := newStore(t, teststore.Engines[0])
	e := newEdge(t, t.TempDir())
	var rejects strings.Builder
	var mu sync.Mutex
	cfg := fastConfig(e.path)
	cfg.Rejects = writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return rejects.Write(p)
	})
	reg := prometheus.NewRegistry()
	cfg.Metrics = follow.NewMetrics(reg)
	now := time.Now().Unix()
	refused := []string{
		fmt.Sprintf(`{"request_id":"%032x","msec":%d.001,"region":"","request_method":"","uri":"","status":400,"body_bytes_sent":157,"upstream_cache_status":""}`, 9001, now),
		fmt.Sprintf(`{"request_id":"%032x","msec":%d.002,"region":"","request_method":"GET","uri":"","status":414,"body_bytes_sent":169,"upstream_cache_status":""}`, 9002, now),
	}
	noRegion := fmt.Sprintf(`{"request_id":"%032x","msec":%d.003,"region":"","request_method":"GET","uri":"/f.bin","status":200,"body_bytes_sent":1,"upstream_cache_status":"MISS"}`, 9003, now)
	e.log(1)
	e.write(strings.Join(append(refused, noRegion), "\n") + "\n")
	e.log(1)
	stop := run(t, st, cfg)
	waitFor(t, st, 2)
	deadline := time.Now().Add(10 * time.Second)
	lines := func(result string) float64 {
		return counterValue(t, reg, "cdnapi_follow_lines_total", "result", result)
	}
	for lines("listed")+lines("skipped")+lines("rejected") < 5 {
		if time.Now().After(deadline) {
			t.Fatalf("5 lines not committed within 10s: listed %v, skipped %v, rejected %v", lines("listed"), lines("skipped"), lines("rejected"))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if got := lines("rejected"); got != 1 {
		t.Errorf("rejected lines: %v, want 1 (the line with no region that nginx did not refuse)", got)
	}
	if got := lines("skipped"); got != 2 {
		t.Errorf("skipped lines: %v, want nginx's 2 refusals", got)
	}
	if got := counterValue(t, reg, "cdnapi_follow_lines_skipped_total", "reason", "nginx_refused"); got != 2 {
		t.Errorf("cdnapi_follow_lines_skipped_total{reason=nginx_refused} = %v, want 2", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := strings.TrimSuffix(rejects.String(), "\n"); got != noRegion {
		t.Errorf("rejects file:\n%s\nwant only the line with no region nginx did not refuse", got)
	}
}

// counterValue returns the value of the counter name{label=value} in reg,
// 0 if there is none.
func counterValue(t *testing.T, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if label == "" {
				return m.GetCounter().GetValue()
			}
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// TestLongLineNamedInTheLog is issue 36's: a line over 64 KiB was rejected
// without a word in the follower's log, unlike every other rejected line.
func TestLongLineNamedInTheLog(t *testing.T) {
	st := newStore(t, teststore.Engines[0])
	e := newEdge(t, t.TempDir())
	var logs lockedLog
	cfg := fastConfig(e.path)
	cfg.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	e.log(1)
	e.write("LONG" + strings.Repeat("x", 70<<10) + "\n")
	e.log(1)
	run(t, st, cfg)
	waitFor(t, st, 2)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "rejected a line of the log") {
		if time.Now().After(deadline) {
			t.Fatalf("the long line is not named in the log within 10s:\n%s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if s := logs.String(); !strings.Contains(s, "longer than 65536 bytes") || !strings.Contains(s, `"starts":"LONGxxx`) {
		t.Errorf("the log says\n%s\nwant the long line named by its start and why it was rejected", s)
	}
}

// lockedLog is a log destination for several goroutines.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestRejectsFileBounded is issue 36's: --rejects doubled the disk an
// attacker could fill (1.8 GB of rejects next to a 1.9 GB log). The file
// is rotated at its bound, once: at most twice the bound on disk, the
// latest lines kept, each whole.
func TestRejectsFileBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "edge.rejects")
	r, err := follow.OpenRejects(path, 1000)
	if err != nil {
		t.Fatal(err)
	}
	line := func(i int) string { return fmt.Sprintf("%03d %s\n", i, strings.Repeat("x", 95)) } // 100 bytes
	for i := range 300 {
		if n, err := r.Write([]byte(line(i))); err != nil || n != 100 {
			t.Fatalf("write %d: %d, %v", i, n, err)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	cur, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	old, err := os.ReadFile(path + ".1")
	if err != nil {
		t.Fatal(err)
	}
	if len(cur) > 1000 || len(old) > 1000 {
		t.Errorf("%d and %d bytes on disk, want at most 1000 each", len(cur), len(old))
	}
	var want strings.Builder
	for i := 280; i < 300; i++ {
		want.WriteString(line(i))
	}
	if got := string(old) + string(cur); got != want.String() {
		t.Errorf("the files hold\n%s\nwant the latest 20 lines, whole", got)
	}
	// Reopened, it goes on from its size.
	r, err = follow.OpenRejects(path, 1000)
	if err != nil {
		t.Fatal(err)
	}
	r.Write([]byte(line(300)))
	r.Close()
	if cur, _ := os.ReadFile(path); string(cur) != line(300) {
		t.Errorf("after a reopen the file holds %q, want the new line alone (the full one rotated)", cur)
	}
}

// TestRejectsBoundTheBatch is issue 36's: a flood of 15.6 KB invalid lines
// took the follower from 95 to 243 MB, since a batch (up to 50,000 lines)
// held a copy of every rejected line until its commit. A batch now holds
// at most 4 MiB of them: 2,000 such lines (31 MB) go in at least 7
// batches, not one, and every line still reaches the rejects file.
func TestRejectsBoundTheBatch(t *testing.T) {
	st := newStore(t, teststore.Engines[0])
	e := newEdge(t, t.TempDir())
	var rejected atomic.Int64
	cfg := fastConfig(e.path)
	cfg.StopAtEnd = true
	cfg.BatchInterval = time.Hour // only a full batch, or the end, commits
	cfg.Rejects = writerFunc(func(p []byte) (int, error) { rejected.Add(1); return len(p), nil })
	reg := prometheus.NewRegistry()
	cfg.Metrics = follow.NewMetrics(reg)
	const n = 2000
	bad := strings.Repeat("y", 15_600) + "\n"
	e.write(strings.Repeat(bad, n))
	e.log(1)
	// No deadline but the test binary's: a backfill on a loaded machine
	// may take minutes, and Run stopped by its context returns nil with
	// the log half read.
	if err := follow.Run(t.Context(), st, cfg); err != nil {
		t.Fatal(err)
	}
	if got := rejected.Load(); got != n {
		t.Errorf("%d lines in the rejects file, want %d", got, n)
	}
	batches := counterValue(t, reg, "cdnapi_follow_batches_total", "", "")
	if batches < 7 {
		t.Errorf("%v batches for %d MB of rejected lines; want at least 7, each holding at most 4 MiB of them", batches, n*len(bad)>>20)
	}
}
