//go:build ignore

// bench-week.go is the program of scripts/bench-week: the assets table of
// one engine at a given size, through the store as serve uses it.
//
//	go run scripts/bench-week.go -db DSN -n N [-seed write|sql] [-days 8] [-writer 5000] [-prune-for 60s]
//
// DSN is a SQLite file's path or a postgres:// URL. An empty table is first
// seeded with N assets over 8 regions, spread evenly over the days before
// now, oldest first, with random IDs as edge logs have. With -seed write
// (the default) they go through Write in transactions of 100,000
// (PostgreSQL: COPY; SQLite: batched INSERTs); with -seed sql the engine
// makes them itself, an INSERT … SELECT per -seed-chunk rows (see
// seedSQL), which is several times faster and gives a table of the same
// shape. A table that holds assets already is measured as it is. It then
// reports:
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
	"database/sql/driver"
	"errors"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/demo"
	"github.com/cdnapi/cdnapi/internal/postgres"
	"github.com/cdnapi/cdnapi/internal/retention"
	"github.com/cdnapi/cdnapi/internal/sqlite"
	"github.com/jackc/pgx/v5"

	msqlite "modernc.org/sqlite"
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
	seedHow  = flag.String("seed", "write", "how to seed an empty table: write (the store's Write) or sql (INSERT … SELECT in the engine)")
	chunk    = flag.Int("seed-chunk", 0, "-seed sql: rows per transaction; 0: 2,000,000 on PostgreSQL, 5,000,000 on SQLite")
	cacheMiB = flag.Int("seed-cache", 8<<10, "-seed sql on SQLite: the seeding connection's page cache, in MiB")
	conns    = flag.Int("seed-conns", 2, "-seed sql on PostgreSQL: connections that seed at once, each a day at a time")
)

func main() {
	log.SetFlags(0)
	flag.Parse()
	ctx := context.Background()
	pg := strings.HasPrefix(*dsn, "postgres://") || strings.HasPrefix(*dsn, "postgresql://")
	if *seedHow != "write" && *seedHow != "sql" {
		log.Fatalf("-seed %q: write or sql", *seedHow)
	}
	open := func() engine {
		var st engine
		var err error
		if pg {
			st, err = postgres.Open(ctx, *dsn, postgres.Options{StatementTimeout: time.Hour})
		} else {
			st, err = sqlite.Open(ctx, *dsn, sqlite.Options{WriterCacheKiB: sqlite.BulkWriterCacheKiB})
		}
		check(err)
		return st
	}
	st := open()
	defer func() { st.Close() }()
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
	switch {
	case len(page) == 0 && *seedHow == "sql":
		st = seedSQL(ctx, st, open, pg, regions, codes, start, end)
	case len(page) == 0:
		seed(ctx, st, regions, codes, start, end)
	default:
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
	t0, c0 := time.Now(), cpu()
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
	fmt.Printf("seeded %d assets in %s (Write): %.0f rows/s; CPU of this process %s\n",
		*n, took.Round(time.Millisecond), float64(*n)/took.Seconds(), (cpu() - c0).Round(100*time.Millisecond))
}

// seedSQL seeds the table as seed does, but has the engine make the rows,
// an INSERT … SELECT of -seed-chunk rows at a time, in time order, so that
// the table and its indexes take the same inserts as through Write: the
// rows at the time end of the table (on PostgreSQL, of one day's
// partition), the IDs at random places of the ID index. The columns follow
// asset: a random ID of "ast_" and 20 base62 digits (on SQLite from
// randomID, through a function it calls; on PostgreSQL 8, 8 and 4 digits
// of three random numbers), "/static/%x/app.js" of a random 32-bit number,
// bytes below 1 MiB, HIT, one of the regions.
//
// On PostgreSQL, each statement is its own transaction, and -seed-conns
// connections seed at once, each a whole UTC day (a partition) at a time,
// oldest first: every partition still takes its rows in time order, and a
// busy machine gives each backend its share of the CPU.
//
// On SQLite it closes st and seeds through a connection of its own, with
// synchronous OFF and no journal, and a page cache of -seed-cache MiB that
// holds a transaction's dirty pages: the ID index, which random IDs dirty
// all over, and the new rows' pages (at 100 million rows, about 5 GiB).
// One transaction for the whole seed did not work: once the cache was
// full, SQLite spilled the pages dirtied first, the ID index's, and read
// them back at once, and the seed ran at a small share of its speed. A
// crash midway leaves a broken file, which a benchmark throws away. The
// file goes back to WAL before st is opened again, and returned.
func seedSQL(ctx context.Context, st engine, open func() engine, pg bool, regions []cdnapi.Region, codes []string, start, end time.Time) engine {
	t0, c0 := time.Now(), cpu()
	if *chunk <= 0 {
		*chunk = map[bool]int{false: 5_000_000, true: 2_000_000}[pg]
	}
	if _, err := retention.MakePartitions(ctx, st, start, end); err != nil {
		log.Fatal(err)
	}
	check(st.Write(ctx, func(w cdnapi.Writer) error { return w.PutRegions(ctx, regions) }))
	spanSecs := int64(end.Sub(start) / time.Second)
	quoted := make([]string, len(codes))
	for i, c := range codes {
		quoted[i] = "'" + strings.ReplaceAll(c, "'", "''") + "'"
	}
	// id returns PostgreSQL's SQL of an ID: "ast_" and, for each random
	// integer rs[k], its digits[k] lowest base62 digits (rs[k] must be
	// below 62^digits[k] for them to be uniform).
	id := func(rs []string, digits []int) string {
		var parts []string
		for k, r := range rs {
			pow := int64(1)
			for range digits[k] {
				parts = append(parts, fmt.Sprintf("substr('%s', (%s / %d %% 62)::int + 1, 1)", base62, r, pow))
				pow *= 62
			}
		}
		return "'ast_' || " + strings.Join(parts, " || ")
	}

	// A seeder inserts the rows [lo, hi) of the n; row i is created at
	// start + i·span/n, in whole seconds, as in seed.
	type seeder struct {
		exec  func(lo, hi int) error
		close func() error
		cpu   func() time.Duration // its PostgreSQL backend's, on this machine
	}
	var seeders []seeder
	var admin *pgx.Conn // PostgreSQL: of the settings of the seed
	segments := [][2]int{{0, *n}}
	var how string
	if pg {
		// As PostgreSQL's "Populating a Database" advises: checkpoints
		// farther apart (max_wal_size 4GB instead of 1GB) for the seed
		// only, and the full-page images of the ID index, which random
		// IDs dirty all over after each checkpoint, compressed.
		var err error
		admin, err = pgx.Connect(ctx, *dsn)
		check(err)
		for _, q := range []string{`ALTER SYSTEM SET max_wal_size = '4GB'`, `SELECT pg_reload_conf()`} {
			_, err := admin.Exec(ctx, q)
			check(err)
		}
		// 62^8 < 2^52: random() gives 8 uniform base62 digits.
		insert := `INSERT INTO assets (id, created_at, path, bytes, cache_status, region)
			SELECT ` + id([]string{"r1", "r2", "r3"}, []int{8, 8, 4}) + `,
				to_timestamp($3::bigint + i * $4::bigint / $5::bigint),
				'/static/' || to_hex(floor(random() * 4294967296)::bigint) || '/app.js',
				floor(random() * 1048576)::bigint, 'HIT',
				(ARRAY[` + strings.Join(quoted, ", ") + `]::text[])[1 + floor(random() * ` + fmt.Sprint(len(codes)) + `)::int]
			FROM (SELECT i, floor(random() * 218340105584896)::bigint AS r1, floor(random() * 218340105584896)::bigint AS r2,
				floor(random() * 14776336)::bigint AS r3
				FROM generate_series($1::bigint, $2::bigint - 1) AS i OFFSET 0) AS s`
		for range max(*conns, 1) {
			conn, err := pgx.Connect(ctx, *dsn)
			check(err)
			for _, q := range []string{`SET wal_compression = lz4`, `SET synchronous_commit = off`} {
				_, err := conn.Exec(ctx, q)
				check(err)
			}
			var pid int
			check(conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid))
			cpu0 := procCPU(pid)
			seeders = append(seeders, seeder{
				exec: func(lo, hi int) error {
					_, err := conn.Exec(ctx, insert, lo, hi, start.Unix(), spanSecs, *n)
					return err
				},
				close: func() error { return conn.Close(ctx) },
				cpu:   func() time.Duration { return procCPU(pid) - cpu0 },
			})
		}
		// A segment per UTC day: the first row at or after each midnight.
		segments = segments[:0]
		lo := 0
		for day := start.Truncate(24 * time.Hour).Add(24 * time.Hour); lo < *n; day = day.Add(24 * time.Hour) {
			hi := *n
			if day.Before(end) {
				// the least i with start + i·span/n ≥ day
				secs := int64(day.Sub(start) / time.Second)
				hi = min(int((secs*int64(*n)+spanSecs-1)/spanSecs), *n)
			}
			if hi > lo {
				segments = append(segments, [2]int{lo, hi})
			}
			lo = hi
		}
		how = fmt.Sprintf("SQL, %d connections, a day at a time each, %d rows per transaction", len(seeders), *chunk)
	} else {
		check(st.Close())
		// The ID is made by a function of this program that SQLite calls
		// for each row: its 20 digits in SQL (substr of each, as on
		// PostgreSQL) took a quarter of the seed's CPU, this a twentieth.
		check(msqlite.RegisterScalarFunction("seed_id", 0, func(*msqlite.FunctionContext, []driver.Value) (driver.Value, error) {
			return randomID(seedRand), nil
		}))
		db, err := sql.Open("sqlite", *dsn+"?_pragma=busy_timeout(5000)&_pragma=cache_size(-"+fmt.Sprint(*cacheMiB<<10)+")")
		check(err)
		conn, err := db.Conn(ctx)
		check(err)
		for _, p := range []string{`PRAGMA journal_mode = OFF`, `PRAGMA synchronous = OFF`} {
			_, err := conn.ExecContext(ctx, p)
			check(err)
		}
		cases := make([]string, len(quoted))
		for i, q := range quoted {
			cases[i] = fmt.Sprintf("WHEN %d THEN %s", i, q)
		}
		insert := `WITH RECURSIVE s(i) AS (SELECT ?1 UNION ALL SELECT i + 1 FROM s WHERE i + 1 < ?2)
			INSERT INTO assets (id, created_at, path, bytes, cache_status, region)
			SELECT seed_id(), ?3 + i * ?4 / ?5,
				printf('/static/%x/app.js', random() & 4294967295),
				random() & 1048575, 'HIT',
				CASE abs(random() % ` + fmt.Sprint(len(codes)) + `) ` + strings.Join(cases, " ") + ` END
			FROM s`
		seeders = append(seeders, seeder{
			exec: func(lo, hi int) error {
				_, err := conn.ExecContext(ctx, insert, lo, hi, start.Unix(), spanSecs, *n)
				return err
			},
			close: func() error {
				if _, err := conn.ExecContext(ctx, `PRAGMA journal_mode = WAL`); err != nil {
					return err
				}
				return errors.Join(conn.Close(), db.Close())
			},
			cpu: func() time.Duration { return 0 },
		})
		how = fmt.Sprintf("SQL, %d rows per transaction", *chunk)
	}

	next := make(chan [2]int, len(segments))
	for _, seg := range segments {
		next <- seg
	}
	close(next)
	var seeded atomic.Int64
	var wg sync.WaitGroup
	for _, sd := range seeders {
		wg.Go(func() {
			for seg := range next {
				for lo := seg[0]; lo < seg[1]; lo += *chunk {
					hi := min(lo+*chunk, seg[1])
					check(sd.exec(lo, hi))
					if done := seeded.Add(int64(hi - lo)); done/10_000_000 != (done-int64(hi-lo))/10_000_000 {
						fmt.Fprintf(os.Stderr, "  seeded %d in %s\n", done, time.Since(t0).Round(time.Second))
					}
				}
			}
		})
	}
	wg.Wait()
	var server time.Duration
	for _, sd := range seeders {
		server += sd.cpu()
		check(sd.close())
	}
	if pg {
		// Back to the defaults, and the seed's dirty pages written out
		// before anything is measured.
		for _, q := range []string{`ALTER SYSTEM RESET max_wal_size`, `SELECT pg_reload_conf()`, `CHECKPOINT`} {
			_, err := admin.Exec(ctx, q)
			check(err)
		}
		check(admin.Close(ctx))
	}
	took := time.Since(t0)
	var serverCPU string
	if pg {
		serverCPU = fmt.Sprintf(", of its PostgreSQL backends %s", server.Round(100*time.Millisecond))
	}
	fmt.Printf("seeded %d assets in %s (%s): %.0f rows/s; CPU of this process %s%s\n",
		*n, took.Round(time.Millisecond), how, float64(*n)/took.Seconds(), (cpu() - c0).Round(100*time.Millisecond), serverCPU)
	if !pg {
		st = open()
	}
	return st
}

func asset(rng *rand.Rand, codes []string, at time.Time) cdnapi.Asset {
	return cdnapi.Asset{ID: randomID(rng), CreatedAt: at.Truncate(time.Second), Path: fmt.Sprintf("/static/%x/app.js", rng.Uint32()),
		Bytes: rng.Int64N(1 << 20), CacheStatus: cdnapi.CacheHit, Region: codes[rng.IntN(len(codes))]}
}

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// seedRand is the source of seed_id, which SQLite calls from one
// connection at a time.
var seedRand = rand.New(rand.NewPCG(11, 12))

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

// cpu returns the CPU time this process has used, user and system.
func cpu() time.Duration {
	var r syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &r) != nil {
		return 0
	}
	return time.Duration(r.Utime.Nano() + r.Stime.Nano())
}

// procCPU returns the CPU time, user and system, of process pid of this
// machine (/proc/PID/stat, in ticks of 1/100 s), or 0 when it cannot tell.
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	var utime, stime int64
	fmt.Sscan(f[11], &utime)
	fmt.Sscan(f[12], &stime)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
