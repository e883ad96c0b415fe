package follow_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
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

// benchRate is the requests per second of the log of BenchmarkThroughput,
// as an edge logs them: the times of its lines go up at this rate.
const benchRate = 5000

// BenchmarkThroughput compares the follower with `cdnapi ingest assets` on
// the same requests: the follower reading an nginx log to its end
// (StopAtEnd) with its default batches, and ingest reading the same
// requests as the API's NDJSON in one transaction. Each starts from an
// empty store with the region. The request IDs are random, as nginx's
// $request_id is, so every batch writes all over the index of asset IDs.
//
// The machine this runs on is shared, and its speed changes from one
// second to the next: each iteration times both, in turns (ingest first
// in one, the follower first in the next), and the benchmark reports the
// ratio of the sums, follow/ingest, beside each one's lines/s. The
// issue's goal: a ratio of 0.8 or more. BATCH_LINES sets the follower's
// BatchLines (default DefaultBatchLines), to compare batch sizes.
//
//	go test -run '^$' -bench Throughput -benchtime 3x ./internal/follow/
func BenchmarkThroughput(b *testing.B) {
	dir := b.TempDir()
	logPath := filepath.Join(dir, "edge.log")
	var nginx, api strings.Builder
	start := time.Now().Add(-benchLines * time.Second / benchRate).UnixMilli()
	for i := range benchLines {
		id := fmt.Sprintf("%x", sha256.Sum256(fmt.Appendf(nil, "%d", i)))[:32]
		msec := start + int64(i*1000/benchRate)
		fmt.Fprintf(&nginx, `{"request_id":"%s","msec":%d.%03d,"region":"FRA1","request_method":"GET","uri":"/f/%d.bin","status":200,"body_bytes_sent":%d,"upstream_cache_status":"%s"}`+"\n",
			id, msec/1000, msec%1000, i, 100+i, []string{"MISS", "HIT"}[i%2])
		fmt.Fprintf(&api, `{"id":"ast_%s","created_at":"%s","path":"/f/%d.bin","bytes":%d,"cache_status":"%s","region":"FRA1"}`+"\n",
			id, cdnapi.Timestamp(time.UnixMilli(msec).Truncate(time.Second)), i, 100+i, []string{"MISS", "HIT"}[i%2])
	}
	if err := os.WriteFile(logPath, []byte(nginx.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, engine := range teststore.Engines {
		b.Run(engine.Name, func(b *testing.B) {
			var followTime, ingestTime time.Duration
			runFollow := func() {
				st := benchStore(b, engine)
				start := time.Now()
				if err := follow.Run(context.Background(), st, follow.Config{Path: logPath, StopAtEnd: true, BatchLines: benchBatchLines()}); err != nil {
					b.Fatal(err)
				}
				followTime += time.Since(start)
				if p, err := st.LogPosition(context.Background(), logPath); err != nil || p.Lines != benchLines {
					b.Fatalf("the follower committed %d lines (%v), want %d", p.Lines, err, benchLines)
				}
			}
			runIngest := func() {
				st := benchStore(b, engine)
				start := time.Now()
				res, err := ingest.Run(context.Background(), st, strings.NewReader(api.String()), ingest.Options{Kind: ingest.Assets})
				if err != nil || res.Written != benchLines {
					b.Fatal(res, err)
				}
				ingestTime += time.Since(start)
			}
			i := 0
			for b.Loop() {
				if i%2 == 0 {
					runIngest()
					runFollow()
				} else {
					runFollow()
					runIngest()
				}
				i++
			}
			b.ReportMetric(float64(benchLines*i)/followTime.Seconds(), "follow-lines/s")
			b.ReportMetric(float64(benchLines*i)/ingestTime.Seconds(), "ingest-lines/s")
			b.ReportMetric(ingestTime.Seconds()/followTime.Seconds(), "follow/ingest")
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

// benchBatchLines is $BATCH_LINES, or 0 for the default.
func benchBatchLines() int {
	n, _ := strconv.Atoi(os.Getenv("BATCH_LINES"))
	return n
}
