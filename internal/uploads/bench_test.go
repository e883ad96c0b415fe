package uploads

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi/internal/clamd"
	"github.com/cdnapi/cdnapi/internal/clamdtest"
	"github.com/cdnapi/cdnapi/internal/teststore"
)

// BenchmarkGate times the whole scan step, as `cdnapi uploads` runs it:
// b.N files of 64 KiB are renamed into incoming, as the upload server puts
// them, and the timer stops when the last is in the origin. Each file is
// seen by inotify, queued, staged (renameat2), opened beneath staging,
// scanned by descriptor (FILDES), checked unchanged, stamped and renamed
// into the origin. It reports files/s.
//
// scripts/bench-scan runs it next to `clamdscan --fdpass` of the same files
// against the same clamd: CDNAPI_BENCH_CLAMD is that clamd's address, and
// CDNAPI_BENCH_CLAMD_FILES a directory of the files, linked (or copied)
// into the tree, as the Gate moves what it promotes. Without them it starts
// its own clamd on b.N new files of random bytes. CDNAPI_BENCH_GATE_WORKERS
// is the Gate's workers, 1 by default: clamdscan --fdpass, too, scans one
// file at a time (`cdnapi uploads` runs 2).
func BenchmarkGate(b *testing.B) {
	addr, dir := os.Getenv("CDNAPI_BENCH_CLAMD"), os.Getenv("CDNAPI_BENCH_CLAMD_FILES")
	if addr == "" {
		addr = clamdtest.Start(b, clamdtest.Options{}).Addr()
	}
	workers := 1
	if s := os.Getenv("CDNAPI_BENCH_GATE_WORKERS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("CDNAPI_BENCH_GATE_WORKERS=%q: want a number of at least 1", s)
		}
		workers = n
	}
	c, err := clamd.New(addr)
	if err != nil {
		b.Fatal(err)
	}
	root := b.TempDir()
	tree, err := OpenTree(root)
	if err != nil {
		b.Fatal(err)
	}
	defer tree.Close()
	// Outside incoming, on the tree's filesystem, so that the files enter
	// incoming by a rename.
	src := filepath.Join(root, "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		b.Fatal(err)
	}
	var from []string
	if dir != "" {
		if from, err = filepath.Glob(filepath.Join(dir, "*")); err != nil || len(from) == 0 {
			b.Fatalf("no files to scan in %q: %v", dir, err)
		}
	}
	names := make([]string, b.N)
	for i := range names {
		names[i] = fmt.Sprintf("%07d.bin", i)
		if err := benchFile(filepath.Join(src, names[i]), from, i); err != nil {
			b.Fatal(err)
		}
	}
	project := filepath.Join(root, Incoming, "p")
	if err := os.Mkdir(project, 0o755); err != nil {
		b.Fatal(err)
	}

	var promoted atomic.Int64
	all := make(chan struct{})
	total := int64(b.N) + 1 // and the warm-up file
	g := New(tree, Options{Scanner: c, Recorder: teststore.SQLite(b), Workers: workers,
		Promoted: func(string, string) {
			if promoted.Add(1) == total {
				close(all)
			}
		}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	}()
	// A file promoted means Run watches incoming/p: the rest reach it by
	// inotify, as in service, not by a rescan.
	if err := benchFile(filepath.Join(src, "warm-up"), from, 0); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(filepath.Join(src, "warm-up"), filepath.Join(project, "warm-up")); err != nil {
		b.Fatal(err)
	}
	for promoted.Load() == 0 {
		if err := ctx.Err(); err != nil {
			b.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}

	b.ResetTimer()
	for _, name := range names {
		if err := os.Rename(filepath.Join(src, name), filepath.Join(project, name)); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-all:
	case <-time.After(10*time.Minute + time.Duration(b.N)*time.Second):
		b.Fatalf("%d of %d files promoted", promoted.Load()-1, b.N)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "files/s")
	if got := len(filesIn(b, filepath.Join(root, Origin, "p"))); got != b.N+1 {
		b.Fatalf("the origin holds %d files, want %d", got, b.N+1)
	}
}

// benchFile makes the file at dst: the i-th of the files from, linked or
// else copied, or 64 KiB of random bytes when from is empty.
func benchFile(dst string, from []string, i int) error {
	if len(from) == 0 {
		buf := make([]byte, 64<<10)
		rand.Read(buf)
		return os.WriteFile(dst, buf, 0o644)
	}
	f := from[i%len(from)]
	if os.Link(f, dst) == nil {
		return nil
	}
	in, err := os.Open(f)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// filesIn returns the names of the entries of dir.
func filesIn(tb testing.TB, dir string) []string {
	tb.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}
