package localcdn

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"
)

// fileKind is one directory of the origin: how many files, their names and
// the range of their sizes.
type fileKind struct {
	dir, prefix, ext string
	n                int
	min, max         int // bytes, drawn log-uniformly between them
}

// originFiles are what the origin serves: 320 files, about 20 MB, in the
// shapes of a site: many small scripts and styles, images, a few large
// videos and downloads. The same every time (a fixed seed), so that the
// README can name /static/js/app-001.js.
var originFiles = []fileKind{
	{"static/js", "app-", ".js", 100, 200, 200 << 10},
	{"static/css", "site-", ".css", 40, 100, 60 << 10},
	{"img", "photo-", ".jpg", 140, 2 << 10, 400 << 10},
	{"video", "clip-", ".mp4", 12, 256 << 10, 3 << 20},
	{"downloads", "pkg-", ".tar.gz", 28, 1, 1 << 20},
}

// writeOrigin writes the origin's files under root, and an index.html,
// dated an hour ago: as if uploaded before the CDN came up, and settled, so
// that the origin sync's first pass lists them all (it leaves a file
// changed within the last second to a later pass, as one still being
// written), and `scripts/cdn up` ends with the whole list in place.
func writeOrigin(root string) (files int, total int64, err error) {
	rng := rand.New(rand.NewPCG(17, 2026))
	uploaded := time.Now().Add(-time.Hour).Truncate(time.Second)
	write := func(name string, data []byte) error {
		if err := os.WriteFile(name, data, 0o644); err != nil {
			return err
		}
		return os.Chtimes(name, uploaded, uploaded)
	}
	for _, k := range originFiles {
		if err := os.MkdirAll(filepath.Join(root, k.dir), 0o755); err != nil {
			return 0, 0, err
		}
		for i := 1; i <= k.n; i++ {
			name := fmt.Sprintf("%s%03d%s", k.prefix, i, k.ext)
			size := logUniform(rng, k.min, k.max)
			if err := write(filepath.Join(root, k.dir, name), content("/"+k.dir+"/"+name, size)); err != nil {
				return 0, 0, err
			}
			files++
			total += int64(size)
		}
	}
	index := []byte("<!doctype html>\n<title>cdnapi origin</title>\n<p>The origin of the CDN on one machine (scripts/cdn).\n")
	if err := write(filepath.Join(root, "index.html"), index); err != nil {
		return 0, 0, err
	}
	return files + 1, total + int64(len(index)), nil
}

// logUniform draws a size between min and max whose logarithm is uniform:
// as many files of 1-10 KB as of 10-100 KB.
func logUniform(rng *rand.Rand, min, max int) int {
	if min >= max {
		return min
	}
	lo, hi := float64(min), float64(max)
	return int(lo * math.Pow(hi/lo, rng.Float64()))
}

// content returns size bytes that name the file, line after line, so that
// a body shows whose it is and no two files are the same. The first 4 KiB
// are repeated: 26 MB of formatted lines would take seconds.
func content(path string, size int) []byte {
	if size <= 0 {
		return nil
	}
	var b bytes.Buffer
	for line := 0; b.Len() < min(size, 4096); line++ {
		fmt.Fprintf(&b, "%s line %d\n", path, line)
	}
	block := b.Bytes()
	out := bytes.Repeat(block, size/len(block)+1)
	return out[:size]
}
