package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
)

// The cases of this file are about assets that an engine may keep in
// partitions by time (cdnapi.AssetPartitioner: PostgreSQL, a partition per
// UTC day). On an engine without partitions they check the same lists and
// the same pruning over one table, which must hold as much.

// boundaryAssets returns assets around the starts of UTC days: several at
// the last second of a day, at its first and at the one after, and some
// through each day, so that ties on created_at span the end of one
// partition and the start of the next. Its IDs are distinct from every
// other fixture's.
func boundaryAssets(days int, regions []string) []cdnapi.Asset {
	first := time.Date(2026, 11, 10, 0, 0, 0, 0, time.UTC)
	var out []cdnapi.Asset
	add := func(at time.Time, n int) {
		for range n {
			i := len(out)
			out = append(out, cdnapi.Asset{
				ID:          fmt.Sprintf("ast_part%04d", (i*7919)%10000), // IDs not in time order
				CreatedAt:   at,
				Path:        fmt.Sprintf("/p/%d.js", i),
				Bytes:       int64(i),
				CacheStatus: cdnapi.CacheHit,
				Region:      regions[i%len(regions)],
			})
		}
	}
	for d := range days {
		start := first.AddDate(0, 0, d)
		add(start.Add(-time.Second), 3)
		add(start, 4)
		add(start.Add(time.Second), 2)
		add(start.Add(7*time.Hour+time.Duration(d)*time.Minute), 2)
	}
	return out
}

// makePartitions makes s's partitions from from to to when s has them.
func makePartitions(t *testing.T, s cdnapi.Store, from, to time.Time) {
	t.Helper()
	if p, ok := s.(cdnapi.AssetPartitioner); ok {
		if _, err := p.MakeAssetPartitions(t.Context(), from, to); err != nil {
			t.Fatalf("MakeAssetPartitions: %v", err)
		}
	}
}

// testPagingAcrossPartitions walks assets that span several days, whose
// partitions exist for some days and not for others (those rows wait in a
// default partition), at every limit: each asset once, in list order, with
// pages that end on the last second of one day and start on the first of
// the next. Cursors between the rows at a day's boundary start the next
// page at exactly the right row.
func testPagingAcrossPartitions(t *testing.T, s cdnapi.Store) {
	codes := RegionCodes(Regions())[:2]
	assets := boundaryAssets(5, codes)
	// The partitions of the middle days only: the first and the last
	// days' rows are in the default partition.
	makePartitions(t, s, time.Date(2026, 11, 10, 12, 0, 0, 0, time.UTC), time.Date(2026, 11, 12, 12, 0, 0, 0, time.UTC))
	putAssets(t, s, assets)
	all := sortedAssets(assets)
	var region []cdnapi.Asset
	for _, a := range all {
		if a.Region == codes[1] {
			region = append(region, a)
		}
	}
	for limit := 1; limit <= len(all)+1; limit++ {
		if d := diffAssets(all, walkAssets(t, s, "", limit)); d != "" {
			t.Fatalf("walk of all regions with limit %d: %s", limit, d)
		}
		if d := diffAssets(region, walkAssets(t, s, codes[1], limit)); d != "" {
			t.Fatalf("walk of %s with limit %d: %s", codes[1], limit, d)
		}
	}
	for i, a := range all {
		after := a.Position()
		got, err := s.ListAssets(t.Context(), cdnapi.AssetQuery{After: &after, Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		end := min(i+1+3, len(all))
		if d := diffAssets(all[i+1:end], got); d != "" {
			t.Fatalf("the page after %s at %s: %s", a.ID, a.CreatedAt.Format(time.RFC3339), d)
		}
	}
}

// testAssetWithoutPartition writes assets for days that have no partition,
// in the future and in the past: each is listed in its place, survives the
// making of its partition (which moves it there), is replaced by a write of
// its ID at another day's time, and is pruned with the rest.
func testAssetWithoutPartition(t *testing.T, s cdnapi.Store) {
	ctx := t.Context()
	codes := RegionCodes(Regions())
	assets := boundaryAssets(2, codes[:1])
	makePartitions(t, s, assets[0].CreatedAt, assets[len(assets)-1].CreatedAt)
	putAssets(t, s, assets)
	future := cdnapi.Asset{ID: "ast_future", CreatedAt: Epoch.AddDate(0, 3, 0), Path: "/future.js",
		Bytes: 1, CacheStatus: cdnapi.CacheMiss, Region: codes[0]}
	past := cdnapi.Asset{ID: "ast_past", CreatedAt: Epoch.AddDate(-5, 0, 0), Path: "/past.js",
		Bytes: 2, CacheStatus: cdnapi.CacheMiss, Region: codes[1]}
	putAssets(t, s, []cdnapi.Asset{future, past})
	want := sortedAssets(append(slices.Clone(assets), future, past))
	check := func(when string) {
		t.Helper()
		for _, limit := range []int{1, 4, cdnapi.MaxLimit} {
			if d := diffAssets(want, walkAssets(t, s, "", limit)); d != "" {
				t.Fatalf("%s: walk with limit %d: %s", when, limit, d)
			}
		}
		if d := diffAssets([]cdnapi.Asset{past}, walkAssets(t, s, codes[1], 1)); d != "" {
			t.Fatalf("%s: walk of %s: %s", when, codes[1], d)
		}
	}
	check("in the default partition")

	// Their partitions are made: the rows move, and nothing else changes.
	makePartitions(t, s, future.CreatedAt, future.CreatedAt)
	makePartitions(t, s, past.CreatedAt, past.CreatedAt)
	check("after their partitions were made")
	if p, ok := s.(cdnapi.AssetPartitioner); ok {
		if n, err := p.MakeAssetPartitions(ctx, future.CreatedAt, future.CreatedAt); err != nil || n != 0 {
			t.Errorf("MakeAssetPartitions of a day that has one = %d, %v; want 0", n, err)
		}
	}

	// The future asset, written again at another day's time (a partition
	// that exists), moves there: one row, at its new place.
	moved := future
	moved.CreatedAt = assets[3].CreatedAt
	moved.Path = "/moved.js"
	putAssets(t, s, []cdnapi.Asset{moved})
	want = sortedAssets(append(slices.Clone(assets), moved, past))
	check("after the future asset moved to another day")

	// Pruning before the second day drops or deletes the first day and the
	// past, whatever holds them.
	cutoff := time.Date(2026, 11, 11, 0, 0, 0, 0, time.UTC)
	if p, ok := s.(cdnapi.AssetPartitioner); ok {
		if _, _, err := p.DropAssetPartitionsBefore(ctx, cutoff); err != nil {
			t.Fatalf("DropAssetPartitionsBefore: %v", err)
		}
	}
	for {
		n, err := s.DeleteAssetsBefore(ctx, cutoff, 5)
		if err != nil {
			t.Fatalf("DeleteAssetsBefore: %v", err)
		}
		if n < 5 {
			break
		}
	}
	var kept []cdnapi.Asset
	for _, a := range want {
		if !a.CreatedAt.Before(cutoff) {
			kept = append(kept, a)
		}
	}
	if len(kept) == 0 || len(kept) == len(want) {
		t.Fatalf("fixture: %d of %d assets after the cutoff; want some on each side", len(kept), len(want))
	}
	if d := diffAssets(kept, walkAssets(t, s, "", 3)); d != "" {
		t.Fatalf("after pruning before %s: %s", cutoff.Format(time.RFC3339), d)
	}
	// Every partition is dropped, the default one kept: writes go on.
	if p, ok := s.(cdnapi.AssetPartitioner); ok {
		if _, _, err := p.DropAssetPartitionsBefore(ctx, Epoch.AddDate(1, 0, 0)); err != nil {
			t.Fatalf("DropAssetPartitionsBefore a year ahead: %v", err)
		}
		if _, err := s.DeleteAssetsBefore(ctx, Epoch.AddDate(1, 0, 0), cdnapi.MaxLimit); err != nil {
			t.Fatal(err)
		}
		putAssets(t, s, []cdnapi.Asset{past})
		if d := diffAssets([]cdnapi.Asset{past}, walkAssets(t, s, "", 1)); d != "" {
			t.Errorf("a write once every partition is dropped: %s", d)
		}
	}
}

// CheckMigratedAssets checks a store whose assets were written before a
// migration of its assets table (PostgreSQL's partitioning of a table that
// had rows): want, every asset it held, is listed and paged exactly, a
// write lands beside them, and pruning removes exactly the older ones.
// Each engine's migration test calls it once it has migrated.
func CheckMigratedAssets(t *testing.T, s cdnapi.Store, want []cdnapi.Asset) {
	t.Helper()
	all := sortedAssets(want)
	for _, limit := range []int{1, 7, cdnapi.MaxLimit} {
		if d := diffAssets(all, walkAssets(t, s, "", limit)); d != "" {
			t.Fatalf("walk after the migration with limit %d: %s", limit, d)
		}
	}
	fresh := Assets(20, RegionCodes(Regions()), 4242)
	for i := range fresh {
		fresh[i].ID += "x" // not one of want's
		fresh[i].CreatedAt = time.Now().UTC().Truncate(time.Second).Add(time.Duration(i) * time.Hour)
	}
	putAssets(t, s, fresh)
	replaced := all[len(all)/2]
	replaced.Path = "/replaced.js"
	putAssets(t, s, []cdnapi.Asset{replaced})
	all[len(all)/2] = replaced
	all = sortedAssets(append(all, fresh...))
	if d := diffAssets(all, walkAssets(t, s, "", cdnapi.MaxLimit)); d != "" {
		t.Fatalf("walk after writes on the migrated table: %s", d)
	}
	cutoff := all[len(all)/2].CreatedAt
	if p, ok := s.(cdnapi.AssetPartitioner); ok {
		if _, _, err := p.DropAssetPartitionsBefore(t.Context(), cutoff); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.DeleteAssetsBefore(t.Context(), cutoff, len(all)); err != nil {
		t.Fatal(err)
	}
	var kept []cdnapi.Asset
	for _, a := range all {
		if !a.CreatedAt.Before(cutoff) {
			kept = append(kept, a)
		}
	}
	if d := diffAssets(kept, walkAssets(t, s, "", cdnapi.MaxLimit)); d != "" {
		t.Fatalf("after pruning the migrated table: %s", d)
	}
}
