package clamd_test

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/cdnapi/cdnapi/internal/clamd"
	"github.com/cdnapi/cdnapi/internal/clamdtest"
)

// BenchmarkScanFile scans 64 KiB files one after another, each by
// descriptor over the unix socket as the service does, and reports files/s.
//
// scripts/bench-scan runs it against the clamd it also times clamdscan
// --fdpass on: CDNAPI_BENCH_CLAMD is that clamd's address, and
// CDNAPI_BENCH_CLAMD_FILES a directory of the files to scan. Without them
// it starts its own clamd on 64 files of random bytes.
func BenchmarkScanFile(b *testing.B) {
	addr, dir := os.Getenv("CDNAPI_BENCH_CLAMD"), os.Getenv("CDNAPI_BENCH_CLAMD_FILES")
	if addr == "" {
		addr = clamdtest.Start(b, clamdtest.Options{}).Addr()
		dir = b.TempDir()
		buf := make([]byte, 64<<10)
		for i := range 64 {
			rand.Read(buf)
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%03d", i)), buf, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	names, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil || len(names) == 0 {
		b.Fatalf("no files to scan in %q: %v", dir, err)
	}
	c, err := clamd.New(addr)
	if err != nil {
		b.Fatal(err)
	}
	// Each scan opens its file, as the service would, and clamdscan does.
	for i := 0; b.Loop(); i++ {
		f, err := os.Open(names[i%len(names)])
		if err != nil {
			b.Fatal(err)
		}
		res, err := c.ScanFile(b.Context(), f)
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
		if res.Infected {
			b.Fatalf("%s: %s found", names[i%len(names)], res.Signature)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "files/s")
}
