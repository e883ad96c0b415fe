//go:build ignore

// bench-week.go is the program of scripts/bench-week: the assets table of
// one engine at a given size, through the store as serve uses it.
//
//	go run scripts/bench-week.go -db DSN -n N [-days 8] [-writer 5000] [-prune-for 60s]
//
// DSN is a SQLite file's path or a postgres:// URL. An empty table is first
// seeded with N assets over 8 regions, spread evenly over the days before
// now, through Write in transactions of 100,000 (PostgreSQL: COPY; SQLite:
// batched INSERTs), with random IDs as edge logs have. A table that holds
// assets already is measured as it is. It then reports:
//
//   - bytes per row: the table and its indexes, on disk, over the rows;
//   - list latency, p50 and p99 of ListAssets (limit 20), for the first
//     page, a region's first page, and pages after random cursors;
//   - pruning while a writer writes: the rows older than half the span are
//     deleted (retention.Prune, as serve's pruner: partitions dropped where
//     the engine has them, then batches of 1,000), while another goroutine
//     writes -writer rows/s of new assets; the rows deleted per second, and
//     the writer's rate meanwhile.
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/demo"
	"github.com/cdnapi/cdnapi/internal/postgres"
	"github.com/cdnapi/cdnapi/internal/retention"
	"github.com/cdnapi/cdnapi/internal/sqlite"
	"github.com/jackc/pgx/v5"

	_ "modernc.org/sqlite"
)

type engine interface {
	cdnapi.Store
	Migrate(ctx context.Context) error
}

var (
	dsn      = flag.String("db", "", "a SQLite file's path, or a postgres:// URL")
	n        = flag.Int("n", 1_000_000, "assets to seed into an empty table")
	days     = flag.Int("days", 8, "the days before now that the assets spread over")
	writer   = flag.Int("writer", 5000, "rows/s the writer writes while pruning runs; 0: none")
	pruneFor = flag.Duration("prune-for", 60*time.Second, "the longest pruning runs")
	queries  = flag.Int("queries", 2000, "queries of each kind of list")
	noPrune  = flag.Bool("no-prune", false, "measure the size and the lists only")
)

func main() {
	log.SetFlags(0)
	flag.Parse()
	ctx := context.Background()
	pg := strings.HasPrefix(*dsn, "postgres://") || strings.HasPrefix(*dsn, "postgresql://")
	var st engine
	var err error
	if pg {
		st, err = postgres.Open(ctx, *dsn, postgres.Options{StatementTimeout: time.Hour})
	} else {
		st, err = sqlite.Open(ctx, *dsn, sqlite.Options{WriterCacheKiB: sqlite.BulkWriterCacheKiB})
	}
	check(err)
	defer st.Close()
	check(st.Migrate(ctx))
	name := map[bool]string{false: "sqlite", true: "postgres"}[pg]

	regions := demo.Regions()[:8]
	codes := make([]string, len(regions))
	for i, r := range regions {
		codes[i] = r.Code
	}
	end := time.Now().UTC().Truncate(time.Second)
	span := time.Duration(*days) * 24 * time.Hour
	start := end.Add(-span)
	page, err := st.ListAssets(ctx, cdnapi.AssetQuery{Limit: 1})
	check(err)
	if len(page) == 0 {
		seed(ctx, st, regions, codes, start, end)
	} else {
		fmt.Printf("%s: the table holds assets; measured as it is\n", name)
	}

	rows, tableBytes, indexBytes := size(ctx, pg)
	fmt.Printf("%s: %d rows; table %s, indexes %s: %.0f bytes per row (table %.0f, indexes %.0f)\n",
		name, rows, mib(tableBytes), mib(indexBytes),
		float64(tableBytes+indexBytes)/float64(rows), float64(tableBytes)/float64(rows), float64(indexBytes)/float64(rows))

	rng := rand.New(rand.NewPCG(1, 2))
	latency(ctx, name, "first page", func() cdnapi.AssetQuery { return cdnapi.AssetQuery{Limit: 20} }, st)
	latency(ctx, name, "a region's first page", func() cdnapi.AssetQuery {
		return cdnapi.AssetQuery{Limit: 20, Region: codes[rng.IntN(len(codes))]}
	}, st)
	latency(ctx, name, "random deep cursor", func() cdnapi.AssetQuery {
		at := start.Add(time.Duration(rng.Int64N(int64(span))))
		return cdnapi.AssetQuery{Limit: 20, After: &cdnapi.Position{CreatedAt: at, ID: randomID(rng)}}
	}, st)
	latency(ctx, name, "a region's random deep cursor", func() cdnapi.AssetQuery {
		at := start.Add(time.Duration(rng.Int64N(int64(span))))
		return cdnapi.AssetQuery{Limit: 20, Region: codes[rng.IntN(len(codes))], After: &cdnapi.Position{CreatedAt: at, ID: randomID(rng)}}
	}, st)
	if !*noPrune {
		prune(ctx, name, st, codes, start.Add(span/2))
	}
}

// seed writes n assets from start to end, oldest first, as edge logs
// arrive, and reports the rate.
func seed(ctx context.Context, st engine, regions []cdnapi.Region, codes []string, start, end time.Time) {
	t0 := time.Now()
	if _, err := retention.MakePartitions(ctx, st, start, end); err != nil {
		log.Fatal(err)
	}
	check(st.Write(ctx, func(w cdnapi.Writer) error { return w.PutRegions(ctx, regions) }))
	rng := rand.New(rand.NewPCG(7, 8))
	const tx, batch = 100_000, 20_000
	step := float64(end.Sub(start)) / float64(*n)
	buf := make([]cdnapi.Asset, 0, batch)
	for done := 0; done < *n; {
		check(st.Write(ctx, func(w cdnapi.Writer) error {
			for i := 0; i < tx && done < *n; {
				buf = buf[:0]
				for ; len(buf) < batch && i < tx && done < *n; i, done = i+1, done+1 {
					buf = append(buf, asset(rng, codes, start.Add(time.Duration(step*float64(done)))))
				}
				if err := w.PutAssets(ctx, buf); err != nil {
					return err
				}
			}
			return nil
		}))
		if done%1_000_000 == 0 {
			fmt.Fprintf(os.Stderr, "  seeded %d in %s\n", done, time.Since(t0).Round(time.Second))
		}
	}
	took := time.Since(t0)
	fmt.Printf("seeded %d assets in %s: %.0f rows/s\n", *n, took.Round(time.Millisecond), float64(*n)/took.Seconds())
}

func asset(rng *rand.Rand, codes []string, at time.Time) cdnapi.Asset {
	return cdnapi.Asset{ID: randomID(rng), CreatedAt: at.Truncate(time.Second), Path: fmt.Sprintf("/static/%x/app.js", rng.Uint32()),
		Bytes: rng.Int64N(1 << 20), CacheStatus: cdnapi.CacheHit, Region: codes[rng.IntN(len(codes))]}
}

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

func randomID(rng *rand.Rand) string {
	b := []byte("ast_00000000000000000000")
	for i := 4; i < len(b); i++ {
		b[i] = base62[rng.IntN(len(base62))]
	}
	return string(b)
}

// size returns the rows of assets and the bytes on disk of the table and
// of its indexes, from the engine's own accounting: PostgreSQL's
// pg_table_size and pg_indexes_size of every partition, SQLite's dbstat.
func size(ctx context.Context, pg bool) (rows, table, index int64) {
	if pg {
		conn, err := pgx.Connect(ctx, *dsn)
		check(err)
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, `VACUUM ANALYZE assets`)
		check(err)
		check(conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM assets),
			coalesce(sum(pg_table_size(c.oid)), 0)::bigint, coalesce(sum(pg_indexes_size(c.oid)), 0)::bigint
			FROM pg_class c WHERE c.oid = 'assets'::regclass OR c.oid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = 'assets'::regclass)`).
			Scan(&rows, &table, &index))
		return rows, table, index
	}
	db, err := sql.Open("sqlite", *dsn)
	check(err)
	defer db.Close()
	check(db.QueryRowContext(ctx, `SELECT count(*) FROM assets`).Scan(&rows))
	q, err := db.QueryContext(ctx, `SELECT name, sum(pgsize) FROM dbstat
		WHERE name IN (SELECT name FROM sqlite_schema WHERE tbl_name = 'assets') GROUP BY name`)
	check(err)
	defer q.Close()
	for q.Next() {
		var name string
		var b int64
		check(q.Scan(&name, &b))
		if name == "assets" {
			table += b
		} else {
			index += b
		}
	}
	check(q.Err())
	return rows, table, index
}

// latency runs -queries lists of one kind, one at a time, and prints p50
// and p99.
func latency(ctx context.Context, engine, kind string, query func() cdnapi.AssetQuery, st engine) {
	took := make([]time.Duration, 0, *queries)
	for range *queries {
		q := query()
		t0 := time.Now()
		_, err := st.ListAssets(ctx, q)
		took = append(took, time.Since(t0))
		check(err)
	}
	slices.Sort(took)
	fmt.Printf("%s: %-30s p50 %8s  p99 %8s\n", engine, kind,
		took[len(took)/2].Round(time.Microsecond), took[len(took)*99/100].Round(time.Microsecond))
}

// prune deletes the assets before cutoff as serve's pruner does, while a
// writer writes -writer rows/s, and prints both rates.
func prune(ctx context.Context, engine string, st engine, codes []string, cutoff time.Time) {
	wctx, stop := context.WithCancel(ctx)
	var written atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		if *writer <= 0 {
			return // pruning alone
		}
		rng := rand.New(rand.NewPCG(9, 10))
		const tick = 100 * time.Millisecond
		per := max(*writer/10, 1)
		t := time.NewTicker(tick)
		defer t.Stop()
		batch := make([]cdnapi.Asset, per)
		for wctx.Err() == nil {
			now := time.Now()
			for i := range batch {
				batch[i] = asset(rng, codes, now)
			}
			if err := st.Write(wctx, func(w cdnapi.Writer) error { return w.PutAssets(wctx, batch) }); err == nil {
				written.Add(int64(per))
			}
			select {
			case <-wctx.Done():
			case <-t.C:
			}
		}
	})
	pctx, cancel := context.WithTimeout(ctx, *pruneFor)
	defer cancel()
	t0 := time.Now()
	r, err := retention.Prune(pctx, st, cutoff, retention.Options{})
	took := time.Since(t0)
	stop()
	wg.Wait()
	if err != nil && pctx.Err() == nil {
		log.Fatal(err)
	}
	status := "done"
	if pctx.Err() != nil {
		status = "stopped at -prune-for"
	}
	fmt.Printf("%s: prune (%s) in %s: %d partitions dropped (about %d rows), %d rows deleted: %.0f rows/s deleted, %.0f rows/s in all; writer %.0f rows/s meanwhile\n",
		engine, status, took.Round(time.Millisecond), r.Partitions, r.PartitionAssets, r.Deleted,
		float64(r.Deleted)/took.Seconds(), (float64(r.Deleted)+float64(r.PartitionAssets))/took.Seconds(),
		float64(written.Load())/took.Seconds())
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
