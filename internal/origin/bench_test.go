package origin_test

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi/internal/origin"
	"github.com/cdnapi/cdnapi/internal/teststore"
)

// cpuTime is the user and system time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkResync times a sync with nothing changed, as a new process makes
// it (a new Syncer, which reads the list again), of a tree of 20,000 files of
// 1 KiB in 200 folders on SQLite, and reports it as a share of the first
// sync of the same tree, in wall and CPU time (resync-wall-% and
// resync-cpu-%; the goal of issue 18 is 5% at 100,000 files, which
// scripts/bench-origin measures with the whole program).
//
//	go test -run '^$' -bench Resync -benchtime 10x ./internal/origin/
func BenchmarkResync(b *testing.B) {
	root := b.TempDir()
	content := make([]byte, 1024)
	past := time.Now().Add(-time.Hour)
	for d := range 200 {
		dir := filepath.Join(root, fmt.Sprintf("d%03d", d))
		if err := os.Mkdir(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range 100 {
			p := filepath.Join(dir, fmt.Sprintf("f%03d.bin", f))
			content[0], content[1] = byte(d), byte(f)
			if err := os.WriteFile(p, content, 0o644); err != nil {
				b.Fatal(err)
			}
			if err := os.Chtimes(p, past, past); err != nil {
				b.Fatal(err)
			}
		}
	}
	st := teststore.SQLite(b)
	sync := func() origin.Result {
		s, err := origin.New(st, root, origin.Options{Project: project})
		if err != nil {
			b.Fatal(err)
		}
		res, err := s.Sync(b.Context())
		if err != nil {
			b.Fatal(err)
		}
		return res
	}
	wall, cpu := time.Now(), cpuTime()
	if res := sync(); res.Hashed != 20_000 {
		b.Fatalf("first sync: %+v, want 20,000 files hashed", res)
	}
	firstWall, firstCPU := time.Since(wall), cpuTime()-cpu

	b.ResetTimer()
	wall, cpu = time.Now(), cpuTime()
	for b.Loop() {
		if res := sync(); res.Unchanged != 20_000 || res.Written() != 0 {
			b.Fatalf("re-run: %+v, want 20,000 unchanged and nothing written", res)
		}
	}
	n := float64(b.N)
	b.ReportMetric(100*time.Since(wall).Seconds()/n/firstWall.Seconds(), "resync-wall-%")
	b.ReportMetric(100*(cpuTime()-cpu).Seconds()/n/firstCPU.Seconds(), "resync-cpu-%")
}
