package demo

import (
	"context"
	"errors"
	"github.com/cdnapi/cdnapi/internal/teststore"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/sqlite"
	"github.com/cdnapi/cdnapi/internal/storetest"
)

// walk reads a whole list, a page of the largest size at a time.
func walk[T any](t *testing.T, list func(after *cdnapi.Position) ([]T, error), position func(T) cdnapi.Position) []T {
	t.Helper()
	var all []T
	var after *cdnapi.Position
	for {
		page, err := list(after)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, page...)
		if len(page) < cdnapi.MaxLimit {
			return all
		}
		p := position(page[len(page)-1])
		after = &p
	}
}

// storedFiles walks the whole file list of project.
func storedFiles(t *testing.T, s *sqlite.Store, project string) []cdnapi.File {
	return walk(t, func(after *cdnapi.Position) ([]cdnapi.File, error) {
		return s.ListFiles(context.Background(), cdnapi.FileQuery{Project: project, After: after, Limit: cdnapi.MaxLimit})
	}, cdnapi.File.Position)
}

// storedAssets walks the whole asset list.
func storedAssets(t *testing.T, s *sqlite.Store) []cdnapi.Asset {
	return walk(t, func(after *cdnapi.Position) ([]cdnapi.Asset, error) {
		return s.ListAssets(context.Background(), cdnapi.AssetQuery{After: after, Limit: cdnapi.MaxLimit})
	}, cdnapi.Asset.Position)
}

func TestSeedWritesExactlyWhatWasAsked(t *testing.T) {
	tests := []struct {
		name          string
		files, assets int
		batchSize     int
	}{
		{"nothing but regions", 0, 0, 0},
		{"one partial batch", 7, 3, 0},
		{"several batches and a partial one", 1234, 567, 100},
		{"batches of one", 5, 4, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			store := teststore.SQLite(t)
			opts := SeedOptions{Project: "acme", Files: tt.files, Assets: tt.assets, Seed: 9, Now: testNow, BatchSize: tt.batchSize}
			// Seeding twice must leave what seeding once leaves.
			for range 2 {
				if err := Seed(ctx, storetest.Writer(store), opts); err != nil {
					t.Fatal(err)
				}
			}

			regions, err := store.ListRegions(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(regions) != len(Regions()) {
				t.Errorf("stored %d regions, want %d", len(regions), len(Regions()))
			}

			g := NewGenerator(9, testNow)
			wantFiles := files(g, tt.files)
			for i := range wantFiles {
				wantFiles[i].Project = "acme"
			}
			storetest.SortFiles(wantFiles)
			if got := storedFiles(t, store, "acme"); len(got) != tt.files || (tt.files > 0 && !reflect.DeepEqual(got, wantFiles)) {
				t.Errorf("stored %d files, want exactly the %d generated", len(got), tt.files)
			}
			if got := storedFiles(t, store, "default"); len(got) != 0 {
				t.Errorf("stored %d files in another project", len(got))
			}

			wantAssets := assets(g, tt.assets)
			storetest.SortAssets(wantAssets)
			if got := storedAssets(t, store); len(got) != tt.assets || (tt.assets > 0 && !reflect.DeepEqual(got, wantAssets)) {
				t.Errorf("stored %d assets, want exactly the %d generated", len(got), tt.assets)
			}
		})
	}
}

func TestSeedStopsWhenCanceled(t *testing.T) {
	store := teststore.SQLite(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := Seed(ctx, storetest.Writer(store), SeedOptions{Project: "acme", Files: 10, Assets: 10, Now: testNow})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Seed with a canceled context returned %v, want context.Canceled", err)
	}
	if got := storedFiles(t, store, "acme"); len(got) != 0 {
		t.Errorf("Seed wrote %d files after its context ended", len(got))
	}
}

// Invalid options are refused before the writer is touched, so a nil
// writer is enough here.
func TestSeedRefusesInvalidOptions(t *testing.T) {
	valid := SeedOptions{Project: "default", Files: 1, Assets: 1, Now: testNow}
	tests := []struct {
		name   string
		change func(*SeedOptions)
	}{
		{"no project", func(o *SeedOptions) { o.Project = "" }},
		{"negative files", func(o *SeedOptions) { o.Files = -1 }},
		{"negative assets", func(o *SeedOptions) { o.Assets = -1 }},
		{"no reference time", func(o *SeedOptions) { o.Now = time.Time{} }},
		{"negative batch size", func(o *SeedOptions) { o.BatchSize = -5 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := valid
			tt.change(&opts)
			if err := Seed(context.Background(), nil, opts); err == nil {
				t.Error("Seed accepted the options")
			}
		})
	}
}

// BenchmarkSeed seeds 100,000 files into a fresh SQLite store per
// iteration; multiply by ten for the figure of a million.
func BenchmarkSeed(b *testing.B) {
	const n = 100_000
	ctx := context.Background()
	for b.Loop() {
		b.StopTimer()
		store, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "cdnapi.db"), sqlite.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if err := store.Migrate(ctx); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := Seed(ctx, storetest.Writer(store), SeedOptions{Project: "default", Files: n, Seed: 1, Now: testNow}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		store.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "files/s")
}
