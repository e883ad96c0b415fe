package follow_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/follow"
	"github.com/cdnapi/cdnapi/internal/ingest"
	"github.com/cdnapi/cdnapi/internal/storetest"
	"github.com/cdnapi/cdnapi/internal/teststore"
)

// benchLines is the size of the log of BenchmarkThroughput.
const benchLines = 200_000

// BenchmarkThroughput compares the follower with `cdnapi ingest assets` on
// the same requests: the follower reading an nginx log to its end
// (StopAtEnd), committing a batch every DefaultBatchLines lines, and
// ingest reading the same requests as the API's NDJSON in one transaction.
// Both start from an empty store with the region. The goal: the
// follower at 0.8× ingest's lines per second or better.
//
//	go test -run '^$' -bench Throughput -benchtime 3x ./internal/follow/
func BenchmarkThroughput(b *testing.B) {
	dir := b.TempDir()
	logPath := filepath.Join(dir, "edge.log")
	var nginx, api strings.Builder
	now := time.Now().Unix()
	for i := range benchLines {
		nginx.WriteString(line(i, 200))
		nginx.WriteByte('\n')
		fmt.Fprintf(&api, `{"id":"ast_%032x","created_at":"%s","path":"/f/%d.bin","bytes":%d,"cache_status":"%s","region":"FRA1"}`+"\n",
			i, cdnapi.Timestamp(time.Unix(now, 0)), i, 100+i, []string{"MISS", "HIT"}[i%2])
	}
	if err := os.WriteFile(logPath, []byte(nginx.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, engine := range teststore.Engines {
		b.Run(engine.Name+"/follow", func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				st := benchStore(b, engine)
				b.StartTimer()
				err := follow.Run(context.Background(), st, follow.Config{Path: logPath, StopAtEnd: true})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(benchLines*b.N)/b.Elapsed().Seconds(), "lines/s")
		})
		b.Run(engine.Name+"/ingest", func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				st := benchStore(b, engine)
				b.StartTimer()
				res, err := ingest.Run(context.Background(), st, strings.NewReader(api.String()), ingest.Options{Kind: ingest.Assets})
				if err != nil || res.Written != benchLines {
					b.Fatal(res, err)
				}
			}
			b.ReportMetric(float64(benchLines*b.N)/b.Elapsed().Seconds(), "lines/s")
		})
	}
}

func benchStore(b *testing.B, engine teststore.Engine) cdnapi.Store {
	st := engine.Open(b)
	if err := storetest.Writer(st).PutRegions(context.Background(), []cdnapi.Region{
		{Code: "FRA1", Name: "Frankfurt", Zone: "eu-central", Country: "DE", Status: cdnapi.StatusOperational},
	}); err != nil {
		b.Fatal(err)
	}
	return st
}
