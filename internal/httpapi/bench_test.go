package httpapi

import (
	"net/http"
	"os"
	"strconv"
	"testing"
)

// benchFiles is the number of files the page benchmarks seed: 100,000 by
// default, so that they start quickly, or CDNAPI_BENCH_FILES, e.g. 1000000
// for the figures of docs/performance.md.
func benchFiles(b *testing.B) int {
	if s := os.Getenv("CDNAPI_BENCH_FILES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1000 {
			b.Fatalf("CDNAPI_BENCH_FILES=%q: want a number of at least 1000", s)
		}
		return n
	}
	return 100_000
}

// discardWriter is a ResponseWriter that keeps only the status, so that the
// benchmarks measure the handler rather than a recorder.
type discardWriter struct {
	header http.Header
	status int
}

func (w *discardWriter) Header() http.Header         { return w.header }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(status int)      { w.status = status }
