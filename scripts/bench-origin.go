//go:build ignore

// bench-origin.go is the helper of scripts/bench-origin, built by it with the
// standard library only:
//
//	bench-origin tree DIR N    writes N files under DIR, the same every time:
//	                           100 files a folder, in folders two deep, of sizes
//	                           drawn log-uniformly from 64 B to 128 KiB, but
//	                           every thousandth file 4 MiB (about 20 KB a file
//	                           on average: 2 GB for 100,000 files)
//	bench-origin touch DIR K   rewrites K of those files with new content of
//	                           the same size, for the run after a change
package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
)

func main() {
	if len(os.Args) != 4 {
		fail(fmt.Errorf("usage: bench-origin tree|touch DIR N"))
	}
	dir := os.Args[2]
	n, err := strconv.Atoi(os.Args[3])
	if err != nil || n < 1 {
		fail(fmt.Errorf("N: want a positive number, got %q", os.Args[3]))
	}
	switch os.Args[1] {
	case "tree":
		var total int64
		buf := make([]byte, 4<<20)
		src := rand.NewChaCha8([32]byte{18})
		sizes := rand.New(rand.NewPCG(18, 2026))
		for i := range n {
			size := fileSize(sizes, i)
			src.Read(buf[:size])
			path := name(dir, i)
			if i%100 == 0 {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					fail(err)
				}
			}
			if err := os.WriteFile(path, buf[:size], 0o644); err != nil {
				fail(err)
			}
			total += int64(size)
		}
		fmt.Printf("%d files, %.2f GB\n", n, float64(total)/1e9)
	case "touch":
		// Every n-th file of those a tree holds: their sizes stay, their
		// content changes.
		src := rand.NewChaCha8([32]byte{19})
		for i := 0; i < n; i++ {
			path := name(dir, i*97)
			fi, err := os.Stat(path)
			if err != nil {
				fail(err)
			}
			buf := make([]byte, fi.Size())
			src.Read(buf)
			if err := os.WriteFile(path, buf, 0o644); err != nil {
				fail(err)
			}
		}
	default:
		fail(fmt.Errorf("unknown %q", os.Args[1]))
	}
}

// name is the path of file i: d000/d00/f00000.bin, 100 files a folder.
func name(dir string, i int) string {
	return filepath.Join(dir, fmt.Sprintf("d%03d", i/10000), fmt.Sprintf("d%02d", i/100%100), fmt.Sprintf("f%06d.bin", i))
}

func fileSize(rng *rand.Rand, i int) int {
	if i%1000 == 999 {
		return 4 << 20
	}
	const lo, hi = 64.0, 128 << 10
	return int(lo * math.Pow(hi/lo, rng.Float64()))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench-origin:", err)
	os.Exit(1)
}
