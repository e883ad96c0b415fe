package postgres

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/pgtest"
	"github.com/cdnapi/cdnapi/internal/storetest"
)

// partitionRows returns the partitions of assets and their rows, by name.
func partitionRows(t *testing.T, s *Store) map[string]int {
	t.Helper()
	rows, err := s.primary.Query(t.Context(), `SELECT tableoid::regclass::text, count(*) FROM assets GROUP BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[string]int{}
	for rows.Next() {
		var name string
		var n int
		if err := rows.Scan(&name, &n); err != nil {
			t.Fatal(err)
		}
		got[name] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

// partitions returns the names of the partitions of assets, sorted.
func partitions(t *testing.T, s *Store) []string {
	t.Helper()
	rows, err := s.primary.Query(t.Context(), `SELECT inhrelid::regclass::text FROM pg_inherits WHERE inhparent = 'assets'::regclass`)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// A new database has today's partition and the next three days', and the
// default one; no legacy partition, since the table was empty.
func TestPartitionsOfNewDatabase(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	today := utcDay(time.Now())
	var want []string
	for d := range 4 {
		want = append(want, "assets_p"+today.AddDate(0, 0, d).Format("20060102"))
	}
	want = append(want, "assets_default")
	slices.Sort(want)
	if got := partitions(t, s); !slices.Equal(got, want) {
		t.Errorf("partitions %q, want %q", got, want)
	}
}

// A row for a day without a partition waits in the default partition, and
// moves into the day's partition when it is made; the partition is made
// once. Dropping it reports the planner's estimate of its rows.
func TestPartitionMovesRowsFromDefault(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	assets := storetest.Assets(200, []string{"FRA1"}, 77) // the week before storetest.Epoch
	if err := storetest.Writer(s).PutAssets(ctx, assets); err != nil {
		t.Fatal(err)
	}
	if got := partitionRows(t, s); got["assets_default"] != len(assets) {
		t.Fatalf("rows by partition %v, want all %d in assets_default", got, len(assets))
	}
	day := utcDay(assets[0].CreatedAt)
	inDay := 0
	for _, a := range assets {
		if utcDay(a.CreatedAt).Equal(day) {
			inDay++
		}
	}
	n, err := s.MakeAssetPartitions(ctx, day, day)
	if err != nil || n != 1 {
		t.Fatalf("MakeAssetPartitions = %d, %v; want 1", n, err)
	}
	name := "assets_p" + day.Format("20060102")
	got := partitionRows(t, s)
	if got[name] != inDay || got["assets_default"] != len(assets)-inDay {
		t.Errorf("rows by partition %v, want %d in %s and the other %d in assets_default", got, inDay, name, len(assets)-inDay)
	}
	if n, err := s.MakeAssetPartitions(ctx, day, day); err != nil || n != 0 {
		t.Errorf("MakeAssetPartitions again = %d, %v; want 0", n, err)
	}
	if _, err := s.primary.Exec(ctx, `ANALYZE assets`); err != nil {
		t.Fatal(err)
	}
	dropped, rows, err := s.DropAssetPartitionsBefore(ctx, day.AddDate(0, 0, 1))
	if err != nil || dropped != 1 || rows != int64(inDay) {
		t.Errorf("DropAssetPartitionsBefore = %d, %d, %v; want 1 partition of %d rows", dropped, rows, err, inDay)
	}
	if got := partitionRows(t, s); got[name] != 0 || got["assets_default"] != len(assets)-inDay {
		t.Errorf("rows by partition after the drop %v", got)
	}
}

// A DROP that cannot have the table's lock within partitionLockTimeout
// gives up and says so, instead of queueing every read behind it; the next
// call drops the partition.
func TestPartitionDropGivesUpOnLock(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	day := utcDay(storetest.Epoch)
	if _, err := s.MakeAssetPartitions(ctx, day, day); err != nil {
		t.Fatal(err)
	}
	tx, err := s.primary.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT count(*) FROM assets`); err != nil { // a long read's lock
		t.Fatal(err)
	}
	start := time.Now()
	n, _, err := s.DropAssetPartitionsBefore(ctx, day.AddDate(0, 0, 1))
	if err == nil || n != 0 {
		t.Errorf("DropAssetPartitionsBefore under a reader's lock = %d, %v; want an error", n, err)
	}
	if took := time.Since(start); took > partitionLockTimeout+5*time.Second {
		t.Errorf("it gave up after %s", took)
	}
	tx.Rollback(ctx)
	if n, _, err := s.DropAssetPartitionsBefore(ctx, day.AddDate(0, 0, 1)); err != nil || n != 1 {
		t.Errorf("DropAssetPartitionsBefore after the reader = %d, %v; want 1", n, err)
	}
}

// TestMigrationPartitionsTable migrates a table that holds rows (at
// version 9, the last unpartitioned one) while a reader lists it: the rows
// become the partition assets_legacy, list, page and prune exactly (the
// suite's CheckMigratedAssets), and the reader never fails. Down again,
// the table is one table with every row.
func TestMigrationPartitionsTable(t *testing.T) {
	t.Parallel()
	const before = 9
	s, provider := openAt(t, pgtest.NewSchema(t), before)
	ctx := t.Context()
	assets := storetest.Assets(3000, storetest.RegionCodes(storetest.Regions()), 99)
	if err := storetest.Writer(s).PutAssets(ctx, assets); err != nil {
		t.Fatal(err)
	}

	rctx, stop := context.WithCancel(ctx)
	reads := make(chan error, 1)
	go func() {
		n := 0
		for rctx.Err() == nil {
			if _, err := s.ListAssets(rctx, cdnapi.AssetQuery{Limit: 100}); err != nil && rctx.Err() == nil {
				reads <- err
				return
			}
			n++
		}
		reads <- nil
	}()
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	stop()
	if err := <-reads; err != nil {
		t.Errorf("a list during the migration failed: %v", err)
	}
	if got := partitionRows(t, s); got["assets_legacy"] != len(assets) {
		t.Errorf("rows by partition %v, want all %d in assets_legacy", got, len(assets))
	}
	storetest.CheckMigratedAssets(t, s, assets)

	left := len(walkAll(t, s))
	if _, err := provider.DownTo(ctx, before); err != nil {
		t.Fatalf("migrating down to version %d: %v", before, err)
	}
	var n int
	var kind string
	if err := s.primary.QueryRow(ctx, `SELECT count(*), (SELECT relkind::text FROM pg_class WHERE oid = 'assets'::regclass) FROM assets`).Scan(&n, &kind); err != nil {
		t.Fatal(err)
	}
	if n != left || kind != "r" {
		t.Errorf("after migrating down: %d rows in a relation of kind %q, want %d in a plain table", n, kind, left)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate again: %v", err)
	}
	if got := len(walkAll(t, s)); got != left {
		t.Errorf("after down and up: %d assets, want %d", got, left)
	}
}

func walkAll(t *testing.T, s *Store) []cdnapi.Asset {
	t.Helper()
	var all []cdnapi.Asset
	var after *cdnapi.Position
	for {
		page, err := s.ListAssets(t.Context(), cdnapi.AssetQuery{After: after, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, page...)
		if len(page) < 1000 {
			return all
		}
		p := page[len(page)-1].Position()
		after = &p
	}
}

// TestMigrationAtSize measures migration 00011 on a table of
// BENCH_MIGRATE_ROWS assets (scripts/bench-week runs it; skipped unless
// set), while a reader lists the first page in a loop: how long the
// migration takes, and the longest a list waited meanwhile.
func TestMigrationAtSize(t *testing.T) {
	rows, _ := strconv.Atoi(os.Getenv("BENCH_MIGRATE_ROWS"))
	if rows <= 0 {
		t.Skip("BENCH_MIGRATE_ROWS is not set")
	}
	const before = 10 // the last version before 00011
	s, _ := openAt(t, pgtest.NewDatabase(t), before)
	ctx := t.Context()
	// Eight days of assets up to now, over 8 regions, loaded in COPY batches.
	now := time.Now().UTC().Truncate(time.Second)
	step := 8 * 24 * time.Hour / time.Duration(rows)
	const batch = 50_000
	for done := 0; done < rows; done += batch {
		assets := make([]cdnapi.Asset, 0, batch)
		for i := done; i < min(done+batch, rows); i++ {
			assets = append(assets, cdnapi.Asset{ID: fmt.Sprintf("ast_%020d", i), CreatedAt: now.Add(-time.Duration(rows-i) * step),
				Path: "/static/app.js", Bytes: int64(i), CacheStatus: cdnapi.CacheHit, Region: fmt.Sprintf("REG%d", i%8)})
		}
		if err := storetest.Writer(s).PutAssets(ctx, assets); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.primary.Exec(ctx, `VACUUM ANALYZE assets`); err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	var longest time.Duration
	var reads int
	done := make(chan error, 1)
	go func() {
		for rctx.Err() == nil {
			start := time.Now()
			if _, err := s.ListAssets(rctx, cdnapi.AssetQuery{Limit: 20}); err != nil && rctx.Err() == nil {
				done <- err
				return
			}
			longest = max(longest, time.Since(start))
			reads++
		}
		done <- nil
	}()
	start := time.Now()
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	stop()
	if err := <-done; err != nil {
		t.Fatalf("a list during the migration failed: %v", err)
	}
	t.Logf("migration 00011 of %d rows: %s; %d lists meanwhile, the longest %s",
		rows, took.Round(time.Millisecond), reads, longest.Round(time.Millisecond))
	if got := partitionRows(t, s); got["assets_legacy"] != rows {
		t.Errorf("rows by partition %v, want all %d in assets_legacy", got, rows)
	}
}

// Replicas that share the database run their pruners at once: making and
// dropping the same partitions concurrently fails in none of them, and the
// result is made, or dropped, once.
func TestPartitionsConcurrently(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewSchema(t)
	s := openStore(t, dsn, Options{})
	ctx := t.Context()
	assets := storetest.Assets(300, []string{"FRA1"}, 78) // in the default partition
	if err := storetest.Writer(s).PutAssets(ctx, assets); err != nil {
		t.Fatal(err)
	}
	const n = 4
	stores := make([]*Store, n) // separate pools, as separate processes
	for i := range stores {
		stores[i] = openStore(t, dsn, Options{})
	}
	from, to := storetest.Epoch.AddDate(0, 0, -8), storetest.Epoch
	made := make([]int, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, st := range stores {
		wg.Go(func() { made[i], errs[i] = st.MakeAssetPartitions(ctx, from, to) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("MakeAssetPartitions at once: %v", err)
	}
	if total := made[0] + made[1] + made[2] + made[3]; total != 9 {
		t.Errorf("made %v partitions, %d in all; want the 9 days once", made, total)
	}
	if got := partitionRows(t, s); got["assets_default"] != 0 {
		t.Errorf("rows by partition %v; want none left in assets_default", got)
	}
	dropped := make([]int, n)
	for i, st := range stores {
		wg.Go(func() { dropped[i], _, errs[i] = st.DropAssetPartitionsBefore(ctx, to.AddDate(0, 0, 1)) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("DropAssetPartitionsBefore at once: %v", err)
	}
	if len(walkAll(t, s)) != 0 {
		t.Error("assets left after every partition that held them was dropped")
	}

	// Makers and droppers at once, as the pruners of replicas whose
	// clocks differ by a day: the locks are taken in one order, so that
	// none deadlocks.
	if _, err := s.MakeAssetPartitions(ctx, from, to); err != nil {
		t.Fatal(err)
	}
	for i, st := range stores {
		if i%2 == 0 {
			wg.Go(func() { _, errs[i] = st.MakeAssetPartitions(ctx, to, to.AddDate(0, 0, 5)) })
		} else {
			wg.Go(func() { _, _, errs[i] = st.DropAssetPartitionsBefore(ctx, to) })
		}
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("makers and droppers at once: %v", err)
	}
}
