package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
)

// testDeleteAssetsBefore prunes assets in batches: each call deletes the
// oldest assets before the cutoff, no more than its limit, and reports how
// many; an asset created at the cutoff stays, and files are never touched.
func testDeleteAssetsBefore(t *testing.T, s cdnapi.Store) {
	ctx := t.Context()
	regions := Regions()
	putRegions(t, s, regions)
	files := Files(30, "default", 50)
	putFiles(t, s, files)
	assets := Assets(300, RegionCodes(regions), 51) // about 100 instants: many ties
	putAssets(t, s, assets)

	// oldest is every asset, oldest first: the order of deletion.
	oldest := sortedAssets(assets)
	slices.Reverse(oldest)
	cutoff := oldest[150].CreatedAt
	old := 0
	for old < len(oldest) && oldest[old].CreatedAt.Before(cutoff) {
		old++
	}
	if old == 0 || !oldest[old].CreatedAt.Equal(cutoff) {
		t.Fatalf("fixture: want assets before the cutoff and at it")
	}
	// remaining returns the assets left once the first deleted are gone.
	remaining := func(deleted int) []cdnapi.Asset {
		left := slices.Clone(oldest[deleted:])
		slices.Reverse(left)
		return left
	}

	// A cutoff in another zone is the same instant.
	zoned := cutoff.In(time.FixedZone("UTC+5:30", 5*3600+1800))
	n, err := s.DeleteAssetsBefore(ctx, zoned, 7)
	if err != nil || n != 7 {
		t.Fatalf("DeleteAssetsBefore(limit 7) = %d, %v; want 7", n, err)
	}
	if d := diffAssets(remaining(7), walkAssets(t, s, "", cdnapi.MaxLimit)); d != "" {
		t.Fatalf("after deleting 7, the oldest first: %s", d)
	}

	deleted := 7
	for calls := 0; ; calls++ {
		if calls > len(assets) {
			t.Fatal("DeleteAssetsBefore keeps deleting")
		}
		n, err := s.DeleteAssetsBefore(ctx, cutoff, 50)
		if err != nil {
			t.Fatalf("DeleteAssetsBefore: %v", err)
		}
		if n < 0 || n > 50 {
			t.Fatalf("DeleteAssetsBefore(limit 50) = %d", n)
		}
		deleted += n
		if n < 50 {
			break
		}
	}
	if deleted != old {
		t.Errorf("deleted %d assets in all, want the %d before the cutoff", deleted, old)
	}
	if d := diffAssets(remaining(old), walkAssets(t, s, "", cdnapi.MaxLimit)); d != "" {
		t.Errorf("after deleting all before the cutoff: %s", d)
	}
	if n, err := s.DeleteAssetsBefore(ctx, cutoff, 50); err != nil || n != 0 {
		t.Errorf("DeleteAssetsBefore with nothing older = %d, %v; want 0", n, err)
	}

	// Half a second after the cutoff, the assets created at it are older.
	at := old
	for at < len(oldest) && oldest[at].CreatedAt.Equal(cutoff) {
		at++
	}
	n, err = s.DeleteAssetsBefore(ctx, cutoff.Add(500*time.Millisecond), len(assets))
	if err != nil || n != at-old {
		t.Errorf("DeleteAssetsBefore(cutoff + 0.5s) = %d, %v; want the %d created at the cutoff", n, err, at-old)
	}
	if d := diffAssets(remaining(at), walkAssets(t, s, "", cdnapi.MaxLimit)); d != "" {
		t.Errorf("after deleting those created at the cutoff: %s", d)
	}
	if d := diffFiles(sorted(files), walkFiles(t, s, "default", cdnapi.MaxLimit, nil)); d != "" {
		t.Errorf("pruning assets changed the files: %s", d)
	}
}

// testCountAssetsSince counts the newest assets from a time on, up to a
// limit, as serve's start-up forecast of retention does: the count and the
// oldest time counted, an asset at the time itself included.
func testCountAssetsSince(t *testing.T, s cdnapi.Store) {
	c, ok := s.(cdnapi.AssetCounter)
	if !ok {
		t.Skip("the store does not count assets")
	}
	ctx := t.Context()
	if n, oldest, err := c.CountAssetsSince(ctx, Epoch.AddDate(0, 0, -30), 10); err != nil || n != 0 || !oldest.IsZero() {
		t.Errorf("CountAssetsSince on an empty store = %d, %v, %v; want 0 and a zero time", n, oldest, err)
	}
	assets := Assets(200, RegionCodes(Regions()), 61)
	putAssets(t, s, assets)
	newest := sortedAssets(assets)
	since := newest[80].CreatedAt
	want := 0
	for _, a := range assets {
		if !a.CreatedAt.Before(since) {
			want++
		}
	}
	n, oldest, err := c.CountAssetsSince(ctx, since, 1000)
	if err != nil || n != want || !oldest.Equal(since) {
		t.Errorf("CountAssetsSince(%s) = %d, %v, %v; want %d from %v", since, n, oldest, err, want, since)
	}
	n, oldest, err = c.CountAssetsSince(ctx, since.Add(-500*time.Millisecond), 1000)
	if err != nil || n != want {
		t.Errorf("CountAssetsSince half a second before = %d, %v, %v; want %d", n, oldest, err, want)
	}
	n, oldest, err = c.CountAssetsSince(ctx, since, 10)
	if err != nil || n != 10 || !oldest.Equal(newest[9].CreatedAt) {
		t.Errorf("CountAssetsSince(limit 10) = %d, %v, %v; want 10 from %v", n, oldest, err, newest[9].CreatedAt)
	}
}
