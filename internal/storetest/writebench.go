package storetest

import (
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
)

// The sizes of BenchWriteAssets: a table of benchWriteBase assets, a few
// days of a busy edge, and then benchWriteRows more in PutAssets batches
// of benchWriteBatch inside one Write, as one cdnapi ingest writes them.
const (
	benchWriteBase  = 1_000_000
	benchWriteRows  = 500_000
	benchWriteBatch = 5_000
)

// benchRegions are the points of presence of the benchmark assets.
var benchRegions = []string{"AMS1", "BOM1", "CDG1", "FRA1", "GRU1", "IAD1", "JNB1", "LHR1", "NRT1", "ORD1", "SFO1", "SIN1", "SYD1"}

// BenchWriteAssets is every engine's BenchmarkWriteAssets, so that their
// figures compare: ingest into a table of a million assets, where one op
// is one Write of benchWriteRows assets in batches of benchWriteBatch, and rows/s is
// the rate. The assets come in time order, as edge logs deliver them;
// "random" gives them random IDs, as request IDs in real logs are, and
// "sortable" IDs that begin with their creation second.
//
// open returns an empty store for b. loaded, when not nil, runs once the
// base table is written, before the measured Writes: an engine's upkeep
// that would by then have run (PostgreSQL's autovacuum).
func BenchWriteAssets[S cdnapi.Transactor](b *testing.B, open func(b *testing.B) S, loaded func(b *testing.B, s S)) {
	for _, ids := range []struct {
		name     string
		sortable bool
	}{
		{"random", false},
		{"sortable", true},
	} {
		b.Run(ids.name, func(b *testing.B) {
			s := open(b)
			ctx := b.Context()
			log := NewAssetLog(1, Epoch.Add(-7*24*time.Hour), 20, ids.sortable, benchRegions)
			batches := make([][]cdnapi.Asset, benchWriteRows/benchWriteBatch)
			for i := range batches {
				batches[i] = make([]cdnapi.Asset, benchWriteBatch)
			}
			write := func() error {
				return s.Write(ctx, func(w cdnapi.Writer) error {
					for _, batch := range batches {
						if err := w.PutAssets(ctx, batch); err != nil {
							return err
						}
					}
					return nil
				})
			}
			fill := func() {
				for _, batch := range batches {
					log.Fill(batch)
				}
			}

			start := time.Now()
			for range benchWriteBase / benchWriteRows {
				fill()
				if err := write(); err != nil {
					b.Fatalf("writing the base table: %v", err)
				}
			}
			if loaded != nil {
				loaded(b, s)
			}
			b.Logf("base table: %d assets in %v", benchWriteBase, time.Since(start).Round(time.Millisecond))
			for b.Loop() {
				b.StopTimer()
				fill()
				b.StartTimer()
				if err := write(); err != nil {
					b.Fatalf("Write: %v", err)
				}
			}
			b.ReportMetric(float64(benchWriteRows*b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
