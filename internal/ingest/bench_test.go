package ingest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/demo"
	"github.com/cdnapi/cdnapi/internal/ingest"
	"github.com/cdnapi/cdnapi/internal/storetest"
)

// benchLines is the number of asset lines one benchmark iteration ingests.
const benchLines = 200_000

// assetInput returns n demo asset lines as NDJSON and the regions they name,
// built once per process.
var assetInput = sync.OnceValues(func() ([]byte, []cdnapi.Region) {
	g := demo.NewGenerator(1, time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC))
	var buf bytes.Buffer
	for a := range g.Assets(benchLines) {
		line, _ := json.Marshal(map[string]any{
			"id": a.ID, "created_at": cdnapi.Timestamp(a.CreatedAt), "path": a.Path,
			"bytes": a.Bytes, "cache_status": a.CacheStatus, "region": a.Region,
		})
		buf.Write(line)
		buf.WriteByte('\n')
	}
	return buf.Bytes(), demo.Regions()
})

// BenchmarkIngestAssets ingests 200,000 demo asset lines into an empty store
// per iteration, on each engine, and reports lines per second.
func BenchmarkIngestAssets(b *testing.B) {
	input, regions := assetInput()
	for _, name := range ingest.EngineNames() {
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			for b.Loop() {
				b.StopTimer()
				st := ingest.OpenEngine(b, name)
				if err := storetest.Writer(st).PutRegions(ctx, regions); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				res, err := ingest.Run(ctx, st, bytes.NewReader(input), ingest.Options{Kind: ingest.Assets})
				if err != nil || res.Written != benchLines {
					b.Fatalf("ingest: %+v, %v", res, err)
				}
				b.StopTimer()
				st.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(benchLines)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
			b.ReportMetric(float64(len(input))*float64(b.N)/b.Elapsed().Seconds()/1e6, "MB/s")
		})
	}
}

// BenchmarkParseAssets reads, parses and checks the lines without writing
// them: the ceiling of the reading goroutine, which must stay well above
// what the stores write.
func BenchmarkParseAssets(b *testing.B) {
	input, regions := assetInput()
	b.SetBytes(int64(len(input)))
	for b.Loop() {
		n, err := ingest.ParseAssets(bytes.NewReader(input), regions)
		if err != nil || n != benchLines {
			b.Fatalf("parsed %d lines: %v", n, err)
		}
	}
	b.ReportMetric(float64(benchLines)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}
