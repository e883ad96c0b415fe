package sqlite

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/demo"
	"github.com/cdnapi/cdnapi/internal/storetest"
)

// The database of BenchmarkListFiles: a million files of project "default",
// written as `cdnapi seed --files 1000000` writes them, built once per test
// binary, and only when a benchmark asks for it.
const (
	benchFiles = 1_000_000
	benchBatch = 10_000  // rows per PutFiles call in BenchmarkPutFiles
	benchDeep  = 900_000 // rows before the page of the "deep" benchmark
	benchEvery = 997     // rows between two positions of the "random" benchmark
)

var million struct {
	once   sync.Once
	dir    string
	store  *Store
	deep   cdnapi.Position
	random []cdnapi.Position // positions all over the list, in random order
	err    error
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

// millionFiles returns the store of a million files of project "default".
// It also sets million.deep, the position benchDeep rows into its list, and
// million.random.
func millionFiles(b *testing.B) *Store {
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
		start := time.Now()
		opts := demo.SeedOptions{Project: "default", Files: benchFiles, Seed: 1, Now: storetest.Epoch}
		if million.err = s.Write(ctx, func(w cdnapi.Writer) error { return demo.Seed(ctx, w, opts) }); million.err != nil {
			return
		}
		b.Logf("seeded %d files in %v", benchFiles, time.Since(start).Round(time.Millisecond))

		// Find the positions the way a client would: by walking.
		var after *cdnapi.Position
		for walked := 0; walked+benchEvery+20 <= benchFiles; { // every position has a page after it
			page, err := s.ListFiles(ctx, cdnapi.FileQuery{Project: "default", After: after, Limit: benchEvery})
			if err != nil {
				million.err = err
				return
			}
			if walked < benchDeep && walked+len(page) >= benchDeep {
				million.deep = page[benchDeep-walked-1].Position()
			}
			walked += len(page)
			p := page[len(page)-1].Position()
			after = &p
			million.random = append(million.random, p)
		}
		r := rand.New(rand.NewPCG(1, 2))
		r.Shuffle(len(million.random), func(i, j int) {
			million.random[i], million.random[j] = million.random[j], million.random[i]
		})
	})
	if million.err != nil {
		b.Fatalf("building the million-file database: %v", million.err)
	}
	return million.store
}

// BenchmarkListFiles reads pages of 20 files of a million-file list: the
// first page, the page 900,000 rows in, and pages at about a thousand
// positions all over the list, one after the other in random order, as
// clients that page through it at once would ask. Keyset paging makes them
// cost about the same; the random pages also read table pages that the
// reader's page cache does not hold.
func BenchmarkListFiles(b *testing.B) {
	for _, name := range []string{"page1", "deep", "random"} {
		// after returns the cursor of the i-th page read. Each sub-benchmark
		// asks for the database itself, so the one that builds it logs the
		// build; b.Loop starts the clock afterwards.
		after := func(i int) *cdnapi.Position {
			switch name {
			case "deep":
				return &million.deep
			case "random":
				return &million.random[i%len(million.random)]
			}
			return nil
		}
		read := func(s *Store, i int) error {
			// With a deadline, as httpapi calls it: a context that can end
			// costs the driver and database/sql a watcher each.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			files, err := s.ListFiles(ctx, cdnapi.FileQuery{Project: "default", After: after(i), Limit: 20})
			if err == nil && len(files) != 20 {
				err = fmt.Errorf("%d files, want 20", len(files))
			}
			return err
		}
		b.Run(name, func(b *testing.B) {
			s := millionFiles(b)
			for i := 0; b.Loop(); i++ {
				if err := read(s, i); err != nil {
					b.Fatalf("ListFiles: %v", err)
				}
			}
		})
		b.Run(name+"-parallel", func(b *testing.B) {
			s := millionFiles(b)
			var next atomic.Int64
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := read(s, int(next.Add(1))); err != nil {
						b.Errorf("ListFiles: %v", err)
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
			s, _ := openTemp(b, Options{WriterCacheKiB: BulkWriterCacheKiB})
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

// BenchmarkWriteAssets measures ingest into a table of a million assets:
// see storetest.BenchWriteAssets.
func BenchmarkWriteAssets(b *testing.B) {
	storetest.BenchWriteAssets(b, func(b *testing.B) *Store {
		s, _ := openTemp(b, Options{WriterCacheKiB: BulkWriterCacheKiB}) // as cdnapi ingest opens it
		return s
	}, nil)
}
