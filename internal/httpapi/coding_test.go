package httpapi

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/storetest"
)

// filePage returns the body of a page of 100 files, as the API renders it.
func filePage(tb testing.TB) []byte {
	files := storetest.Files(cdnapi.MaxLimit, DefaultProject, 1)
	return appendList(nil, files, appendFile, "AQEHZGVmYXVsdN7bo60NHGZpbF8xeElMUkhhZlRITFBEckpTMERRcG01QWjs6LmVwR5UBkR9V_myQvbZT1AA2uzj6Jqb0eJCXD0qKA")
}

// TestHotPageIsNotCodedAgain checks that a kept representation (a page in
// the page cache) is compressed once per coding: later answers in that
// coding send the kept bytes, allocating nothing.
func TestHotPageIsNotCodedAgain(t *testing.T) {
	rep := &representation{contentType: contentTypeJSON[0], cacheControl: "public, max-age=60", body: filePage(t)}
	rep.precompute()
	for _, tc := range []struct {
		accept string
		c      coding
	}{{"gzip", codingGzip}, {"zstd", codingZstd}} {
		req := httptest.NewRequest(http.MethodGet, "/api/v1/files?limit=100", nil)
		req.Header.Set("Accept-Encoding", tc.accept)
		first := httptest.NewRecorder()
		rep.serve(first, req)
		kept := rep.coded[tc.c].bytes
		if len(kept) == 0 || !bytes.Equal(first.Body.Bytes(), kept) {
			t.Fatalf("%s: the answer's %d bytes are not the kept coding's %d", tc.accept, first.Body.Len(), len(kept))
		}
		w := &discardWriter{header: http.Header{}}
		allocs := testing.AllocsPerRun(20, func() {
			clear(w.header)
			rep.serve(w, req)
		})
		if allocs > 0 || &rep.coded[tc.c].bytes[0] != &kept[0] {
			t.Errorf("%s: serving the hot page again allocates %.0f times: it is coded again", tc.accept, allocs)
		}
	}
}

// BenchmarkCodings measures the content codings on a page of 100 files:
// the bytes of an answer and the CPU to code it (encode), and to serve it
// from the page cache once coded (hot). Compare within one run: the
// machine's other load moves all of them.
func BenchmarkCodings(b *testing.B) {
	body := filePage(b)
	for _, c := range []struct {
		name string
		c    coding
	}{{"gzip", codingGzip}, {"zstd", codingZstd}} {
		b.Run(c.name+"/encode", func(b *testing.B) {
			var buf bytes.Buffer
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				buf.Reset()
				c.c.encode(&buf, body)
			}
			b.ReportMetric(float64(buf.Len()), "bytes/answer")
			b.ReportMetric(float64(len(body)), "identity-bytes")
		})
		b.Run(c.name+"/hot", func(b *testing.B) {
			rep := &representation{contentType: contentTypeJSON[0], cacheControl: "public, max-age=60", body: body}
			rep.precompute()
			req := httptest.NewRequest(http.MethodGet, "/api/v1/files?limit=100", nil)
			req.Header.Set("Accept-Encoding", c.name)
			w := &discardWriter{header: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				clear(w.header)
				rep.serve(w, req)
			}
		})
	}
}
