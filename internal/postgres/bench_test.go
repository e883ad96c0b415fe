package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/pgtest"
	"github.com/cdnapi/cdnapi/internal/storetest"
	"github.com/jackc/pgx/v5"
)

// benchFiles returns n files of one project, newest first, three to a
// second so that ties in created_at are common, with IDs that sort in
// neither insertion nor time order.
func benchFiles(project string, n int) []cdnapi.File {
	files := make([]cdnapi.File, n)
	for i := range files {
		sum := sha256.Sum256(fmt.Appendf(nil, "%s/%d", project, i))
		files[i] = cdnapi.File{
			ID:        "fil_" + hex.EncodeToString(sum[:8]),
			Project:   project,
			CreatedAt: t0.Add(-time.Duration(i/3) * time.Second),
			Filename:  fmt.Sprintf("report-%07d.pdf", i),
			Bytes:     int64(sum[8])<<16 | int64(sum[9]),
			Checksum:  "sha256:" + hex.EncodeToString(sum[:]),
		}
	}
	return files
}

// benchListData is the database of BenchmarkListFiles, built once per
// benchmark process (also under -count) and dropped with the shared cluster.
var benchListData struct {
	once sync.Once
	dsn  string
	err  error
}

// BenchmarkListFiles pages through 1,000,000 files of one project (beside
// 100,000 of another) at limit 20: the first page, and pages half-way and
// 99% of the way through, which a keyset scan must serve as fast as the
// first. Besides ns/op it reports the median latency of one call.
func BenchmarkListFiles(b *testing.B) {
	const n = 1_000_000
	cluster := pgtest.Shared(b)
	benchListData.once.Do(func() {
		benchListData.dsn, benchListData.err = buildListData(b, cluster, n)
	})
	if benchListData.err != nil {
		b.Fatal(benchListData.err)
	}
	s := openStore(b, benchListData.dsn, Options{})
	ctx := b.Context()

	// The positions of the pages, as cursors would carry them: the sorted
	// order is the store's own, so ask it rather than re-sort in Go.
	positions := map[string]*cdnapi.Position{"page1": nil}
	for _, depth := range []int{n / 2, n - n/100} {
		var p cdnapi.Position
		err := s.primary.QueryRow(ctx, `SELECT created_at, id FROM files WHERE project = 'default'
			ORDER BY created_at DESC, id DESC OFFSET $1 LIMIT 1`, depth).Scan(&p.CreatedAt, &p.ID)
		if err != nil {
			b.Fatal(err)
		}
		positions[fmt.Sprintf("deep%d", depth)] = &p
	}

	for _, name := range []string{"page1", fmt.Sprintf("deep%d", n/2), fmt.Sprintf("deep%d", n-n/100)} {
		after := positions[name]
		b.Run(name, func(b *testing.B) {
			q := cdnapi.FileQuery{Project: "default", After: after, Limit: 20}
			var took []time.Duration
			for b.Loop() {
				t := time.Now()
				page, err := s.ListFiles(ctx, q)
				took = append(took, time.Since(t))
				if err != nil || len(page) != 20 {
					b.Fatalf("ListFiles = %d files, %v", len(page), err)
				}
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds()), "p50-µs")
			logPlan(b, s, q)
		})
	}
}

// buildListData creates a database on c with n files of the project
// "default" and n/10 of another, and returns its DSN.
func buildListData(b *testing.B, c *pgtest.Cluster, n int) (string, error) {
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		return "", err
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, `CREATE DATABASE bench_list_files`); err != nil {
		return "", err
	}
	dsn := c.DSN("bench_list_files")
	s, err := Open(ctx, dsn, Options{})
	if err != nil {
		return "", err
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		return "", err
	}
	start := time.Now()
	for batch := range slices.Chunk(append(benchFiles("default", n), benchFiles("other", n/10)...), 50_000) {
		if err := storetest.Writer(s).PutFiles(ctx, batch); err != nil {
			return "", err
		}
	}
	b.Logf("wrote %d files in %v", n+n/10, time.Since(start).Round(time.Millisecond))
	if _, err := s.primary.Exec(ctx, `VACUUM ANALYZE files`); err != nil {
		return "", err
	}
	return dsn, nil
}

// logPlan logs EXPLAIN ANALYZE of the query ListFiles runs for q.
func logPlan(b *testing.B, s *Store, q cdnapi.FileQuery) {
	sql, args := listFilesFirst, []any{q.Project, q.Limit}
	if q.After != nil {
		sql, args = listFilesAfter, []any{q.Project, q.After.CreatedAt, q.After.ID, q.Limit}
	}
	rows, err := s.read.Query(b.Context(), "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) "+sql, args...)
	if err != nil {
		b.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("plan:\n%s", strings.Join(lines, "\n"))
}

// BenchmarkPutFiles compares the two ways an upsert carries its rows, at
// the batch size of demo.Seed and at a larger one: the figures behind
// copyThreshold. Each op writes one batch of new files into a table that
// grows.
func BenchmarkPutFiles(b *testing.B) {
	s := openStore(b, pgtest.NewDatabase(b), Options{})
	for _, size := range []int{500, 5_000, 50_000} {
		for _, path := range []string{"unnest", "copy"} {
			b.Run(fmt.Sprintf("%s/%d", path, size), func(b *testing.B) {
				round := 0
				for b.Loop() {
					b.StopTimer()
					files := benchFiles(fmt.Sprintf("%s-%d-%d", path, size, round), size)
					round++
					b.StartTimer()
					err := s.batch(b.Context(), func(w *batcher) error {
						row := func(i int) []any {
							f := &files[i]
							return []any{f.ID, f.Project, wholeSecondUTC(f.CreatedAt), f.Filename, f.Bytes, f.Checksum}
						}
						if path == "copy" {
							return w.copyExec(b.Context(), &fileUpsert, size, row)
						}
						return w.unnestExec(b.Context(), &fileUpsert, size, row)
					})
					if err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(size*b.N)/b.Elapsed().Seconds(), "rows/s")
			})
		}
	}
}

// BenchmarkWriteAssets measures ingest into a table of a million assets:
// see storetest.BenchWriteAssets.
func BenchmarkWriteAssets(b *testing.B) {
	storetest.BenchWriteAssets(b, func(b *testing.B) *Store {
		return openStore(b, pgtest.NewDatabase(b), Options{})
	}, func(b *testing.B, s *Store) {
		// As autovacuum would after a load, so that the measured Write
		// meets a table with statistics, not a fresh one.
		if _, err := s.primary.Exec(b.Context(), `VACUUM ANALYZE assets`); err != nil {
			b.Fatal(err)
		}
	})
}
