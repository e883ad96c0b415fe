package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/storetest"
)

// The database of BenchmarkListFiles: a million files, built once per test
// binary, and only when a benchmark asks for it.
const (
	benchFiles = 1_000_000
	benchBatch = 10_000  // rows per PutFiles call, as cdnapi seed writes them
	benchDeep  = 900_000 // rows before the page of the "deep" benchmark
)

var million struct {
	once  sync.Once
	dir   string
	store *Store
	deep  cdnapi.Position
	err   error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if million.store != nil {
		million.store.Close()
	}
	if million.dir != "" {
		os.RemoveAll(million.dir)
	}
	os.Exit(code)
}

// millionFiles returns the store of a million files of project "default",
// and the position benchDeep rows into its list.
func millionFiles(b *testing.B) (*Store, cdnapi.Position) {
	million.once.Do(func() {
		ctx := context.Background()
		if million.dir, million.err = os.MkdirTemp("", "cdnapi-bench-"); million.err != nil {
			return
		}
		s, err := Open(ctx, filepath.Join(million.dir, "million.db"), Options{})
		if err != nil {
			million.err = err
			return
		}
		million.store = s
		if million.err = s.Migrate(ctx); million.err != nil {
			return
		}
		var writing time.Duration
		for i := range benchFiles / benchBatch {
			files := inArrivalOrder(storetest.Files(benchBatch, "default", uint64(i)), i*benchBatch)
			start := time.Now()
			if million.err = storetest.Writer(s).PutFiles(ctx, files); million.err != nil {
				return
			}
			writing += time.Since(start)
		}
		b.Logf("wrote %d files in %d PutFiles calls of %d: %v, %.0f rows/s",
			benchFiles, benchFiles/benchBatch, benchBatch, writing.Round(time.Millisecond),
			float64(benchFiles)/writing.Seconds())

		// Find the deep position the way a client would: by walking.
		var after *cdnapi.Position
		for walked := 0; walked < benchDeep; {
			page, err := s.ListFiles(ctx, cdnapi.FileQuery{Project: "default", After: after, Limit: min(10_000, benchDeep-walked)})
			if err != nil {
				million.err = err
				return
			}
			walked += len(page)
			p := page[len(page)-1].Position()
			after = &p
		}
		million.deep = *after
	})
	if million.err != nil {
		b.Fatalf("building the million-file database: %v", million.err)
	}
	return million.store, million.deep
}

// BenchmarkListFiles reads a page of 20 files at the start of a million-file
// list and 900,000 rows into it. Keyset paging makes the two cost the same.
func BenchmarkListFiles(b *testing.B) {
	for _, bc := range []struct {
		name string
		deep bool
	}{
		{"page1", false},
		{"deep", true},
	} {
		// Each sub-benchmark asks for the database itself, so the one that
		// builds it logs the build; b.Loop starts the clock afterwards.
		query := func(b *testing.B) (*Store, cdnapi.FileQuery) {
			s, deep := millionFiles(b)
			q := cdnapi.FileQuery{Project: "default", Limit: 20}
			if bc.deep {
				q.After = &deep
			}
			return s, q
		}
		b.Run(bc.name, func(b *testing.B) {
			s, q := query(b)
			for b.Loop() {
				files, err := s.ListFiles(b.Context(), q)
				if err != nil || len(files) != 20 {
					b.Fatalf("ListFiles = %d files, %v", len(files), err)
				}
			}
		})
		b.Run(bc.name+"-parallel", func(b *testing.B) {
			s, q := query(b)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					files, err := s.ListFiles(context.Background(), q)
					if err != nil || len(files) != 20 {
						b.Errorf("ListFiles = %d files, %v", len(files), err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkPutFiles measures bulk upserts into a growing table. One op is
// one file; the files go in PutFiles calls of benchBatch, as cdnapi seed
// writes them. "arrival" writes files oldest first with IDs that sort by
// time, as uploads arrive and as cdnapi seed writes them: every b-tree
// grows at one end. "random" scatters both keys over the b-trees, the
// worst case, where each batch dirties pages all over the file.
func BenchmarkPutFiles(b *testing.B) {
	for _, order := range []string{"arrival", "random"} {
		b.Run(order, func(b *testing.B) {
			s, _ := openTemp(b, Options{})
			ctx := b.Context()
			seed := uint64(0)
			for written := 0; written < b.N; {
				b.StopTimer()
				seed++
				files := storetest.Files(min(benchBatch, b.N-written), "default", seed)
				if order == "arrival" {
					files = inArrivalOrder(files, written)
				}
				b.StartTimer()
				if err := storetest.Writer(s).PutFiles(ctx, files); err != nil {
					b.Fatalf("PutFiles: %v", err)
				}
				written += len(files)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// inArrivalOrder rewrites files, the from-th onwards of a sequence, to be
// in the order real uploads arrive: created_at rises by a second every
// three files, and each ID begins with its creation second in fixed-width
// base 62, as the IDs of cdnapi seed do, followed by the original suffix
// (which keeps them unique).
func inArrivalOrder(files []cdnapi.File, from int) []cdnapi.File {
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	start := storetest.Epoch.Add(-benchFiles / 3 * time.Second)
	for i := range files {
		created := start.Add(time.Duration(from+i) / 3 * time.Second)
		var sec [6]byte
		for j, v := len(sec)-1, created.Unix(); j >= 0; j, v = j-1, v/62 {
			sec[j] = alphabet[v%62]
		}
		files[i].CreatedAt = created
		files[i].ID = cdnapi.FileIDPrefix + string(sec[:]) + files[i].ID[len(cdnapi.FileIDPrefix):]
	}
	return files
}

// The sizes of BenchmarkWriteAssets: a table of writeBase assets, a few
// days of a busy edge, and then writeRows more in PutAssets batches of
// writeBatch inside one Write, as one cdnapi ingest writes them.
const (
	writeBase  = 1_000_000
	writeRows  = 500_000
	writeBatch = 5_000
)

// benchRegions are the points of presence of the benchmark assets.
var benchRegions = []string{"AMS1", "BOM1", "CDG1", "FRA1", "GRU1", "IAD1", "JNB1", "LHR1", "NRT1", "ORD1", "SFO1", "SIN1", "SYD1"}

// BenchmarkWriteAssets measures ingest into a table of a million assets:
// one op is one Write of writeRows assets in batches of writeBatch, and
// rows/s is the rate. The assets come in time order, as edge logs deliver
// them; "random" gives them random IDs, as request IDs in real logs are,
// and "sortable" IDs that begin with their creation second.
func BenchmarkWriteAssets(b *testing.B) {
	for _, ids := range []struct {
		name     string
		sortable bool
	}{
		{"random", false},
		{"sortable", true},
	} {
		b.Run(ids.name, func(b *testing.B) {
			s, _ := openTemp(b, Options{})
			ctx := b.Context()
			log := storetest.NewAssetLog(1, storetest.Epoch.Add(-7*24*time.Hour), 20, ids.sortable, benchRegions)
			batches := make([][]cdnapi.Asset, writeRows/writeBatch)
			for i := range batches {
				batches[i] = make([]cdnapi.Asset, writeBatch)
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
			for range writeBase / writeRows {
				fill()
				if err := write(); err != nil {
					b.Fatalf("writing the base table: %v", err)
				}
			}
			b.Logf("base table: %d assets in %v", writeBase, time.Since(start).Round(time.Millisecond))
			for b.Loop() {
				b.StopTimer()
				fill()
				b.StartTimer()
				if err := write(); err != nil {
					b.Fatalf("Write: %v", err)
				}
			}
			b.ReportMetric(float64(writeRows*b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
