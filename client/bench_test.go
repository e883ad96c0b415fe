package client_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/cdnapi/cdnapi/client"
)

// The benchmarks of the client's own work (decoding) and of a walk over
// loopback, where the server's work is part of each page:
//
//	go test -run '^$' -bench . ./client/
//
// A walk against a running server, such as the 1,000,000 files of
// scripts/bench-client, reports the same figures:
//
//	CDNAPI_BENCH_API_URL=http://127.0.0.1:8080 go test -run '^$' -bench Walk -benchtime 1x ./client/

// BenchmarkDecode decodes a page of 100 items as the server sends it.
func BenchmarkDecode(b *testing.B) {
	s := startServer(b, engines[0], nil)
	fill(b, s, 100, 100)
	for _, tt := range []struct {
		name, url string
		decode    func([]byte) (int, error)
	}{
		{"files", s.api + "/api/v1/files?limit=100", func(body []byte) (int, error) {
			p, err := client.DecodeFiles(body)
			return len(p.Items), err
		}},
		{"assets", s.edge + "/api/v1/assets?limit=100", func(body []byte) (int, error) {
			p, err := client.DecodeAssets(body)
			return len(p.Items), err
		}},
	} {
		b.Run(tt.name, func(b *testing.B) {
			res, err := http.Get(tt.url)
			must(b, err)
			body, err := io.ReadAll(res.Body)
			res.Body.Close()
			must(b, err)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			items := 0
			for b.Loop() {
				n, err := tt.decode(body)
				if err != nil || n != 100 {
					b.Fatalf("%d items: %v", n, err)
				}
				items += n
			}
			b.ReportMetric(float64(items)/b.Elapsed().Seconds(), "items/s")
		})
	}
}

// BenchmarkWalk walks every file at limit 100, with the default transport
// (gzip) and with compression off. Without CDNAPI_BENCH_API_URL it walks
// 20,000 files of an in-process server on SQLite.
func BenchmarkWalk(b *testing.B) {
	apiURL := os.Getenv("CDNAPI_BENCH_API_URL")
	if apiURL == "" {
		// The server of the tests checks answers against the contract,
		// which costs more than serving them; this one does not.
		s := startServer(b, engines[0], nil)
		fill(b, s, 20_000, 0)
		h, _, err := handlers(b.Context(), s.store, nil)
		must(b, err)
		srv := httptest.NewServer(h)
		b.Cleanup(srv.Close)
		apiURL = srv.URL
	}
	for _, tt := range []struct {
		name      string
		transport *http.Transport
	}{
		{"gzip", &http.Transport{}},
		{"identity", &http.Transport{DisableCompression: true}},
	} {
		b.Run(tt.name, func(b *testing.B) {
			c, err := client.New(apiURL, "", client.WithHTTPClient(&http.Client{Transport: tt.transport}))
			must(b, err)
			items := 0
			for b.Loop() {
				for _, err := range c.Files(b.Context(), client.ListFilesParams{Limit: 100}) {
					if err != nil {
						b.Fatal(err)
					}
					items++
				}
			}
			b.ReportMetric(float64(items)/b.Elapsed().Seconds(), "items/s")
		})
	}
}
