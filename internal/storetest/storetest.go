// Package storetest is the behaviour suite that every cdnapi.Store must
// pass, and deterministic fixtures for the tests of other packages.
//
// An engine's tests call Run with a function that makes a fresh store:
//
//	func TestStore(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) cdnapi.Store { … })
//	}
//
// The suite states, as tests, the parts of the Store contract that the
// interface's types cannot: the list orders (IDs compare byte-wise),
// keyset paging without duplicates or skips, whole-second UTC times,
// upserts, all-or-nothing batches and transactions, isolation of a Write
// under way, batched pruning of assets, paging and pruning across the
// partitions by time of an engine that has them (and a row written before
// its partition exists), log positions moved by
// compare-and-set with the rows they cover, and errors rather than panics
// once the store is closed.
package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
)

// Run runs the behaviour suite against the stores newStore makes. newStore
// must return a fresh, empty, migrated store and close it when t ends
// (t.Cleanup); the suite may also close it earlier itself.
func Run(t *testing.T, newStore func(t *testing.T) cdnapi.Store) {
	tests := []struct {
		name string
		run  func(t *testing.T, s cdnapi.Store)
	}{
		{"Empty", testEmpty},
		{"FilesOrder", testFilesOrder},
		{"AssetsOrder", testAssetsOrder},
		{"RegionsOrder", testRegionsOrder},
		{"RegionUnknown", testRegionUnknown},
		{"FilesWalkEveryLimit", testFilesWalk},
		{"AssetsWalkEveryLimit", testAssetsWalk},
		{"WalkWithInserts", testWalkWithInserts},
		{"DeleteFiles", testDeleteFiles},
		{"WalkWithDeletes", testWalkWithDeletes},
		{"FileStamps", testFileStamps},
		{"AfterPositionBetweenRows", testAfterBetweenRows},
		{"RegionFilter", testRegionFilter},
		{"ProjectScoping", testProjectScoping},
		{"LargeLimit", testLargeLimit},
		{"LimitBelowOne", testLimitBelowOne},
		{"TiesOrderByIDBytes", testTies},
		{"WholeSecondsUTC", testWholeSeconds},
		{"UnicodeRoundTrip", testUnicode},
		{"UpsertFiles", testUpsertFiles},
		{"UpsertAssets", testUpsertAssets},
		{"UpsertRegions", testUpsertRegions},
		{"PutAllOrNothing", testAllOrNothing},
		{"CursorSecret", testCursorSecret},
		{"CursorSecretConcurrentFirstUse", testCursorSecretConcurrent},
		{"ComponentOverrides", testComponentOverrides},
		{"WriteCommits", testWriteCommits},
		{"WriteRollsBack", testWriteRollsBack},
		{"WriteIsolated", testWriteIsolated},
		{"WriteConcurrent", testWriteConcurrent},
		{"DeleteAssetsBefore", testDeleteAssetsBefore},
		{"PagingAcrossPartitions", testPagingAcrossPartitions},
		{"AssetWithoutPartition", testAssetWithoutPartition},
		{"CountAssetsSince", testCountAssetsSince},
		{"SetRegionStatus", testSetRegionStatus},
		{"RegionStatusUntil", testRegionStatusUntil},
		{"Closed", testClosed},
		{"StatusChanges", testStatusChanges},
		{"Incidents", testIncidents},
		{"DeleteHistoryBefore", testDeleteHistory},
		{"OverrideMessage", testOverrideMessage},
		{"MoveLogPosition", testMoveLogPosition},
		{"MoveLogPositionInWrite", testMoveLogPositionInWrite},
		{"LogPositionWideNumbers", testLogPositionWideNumbers},
		{"LogPositionsList", testLogPositionsList},
		{"LogPositionRace", testLogPositionRace},
		{"LogPositionWaits", testLogPositionWaits},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, newStore(t)) })
	}
}

// walkFiles pages through the files of project, limit at a time, as a
// client following cursors would, and returns every file it saw. between,
// when not nil, runs after each page.
func walkFiles(t *testing.T, s cdnapi.Store, project string, limit int, between func(last cdnapi.File)) []cdnapi.File {
	t.Helper()
	return walk(t, "ListFiles", limit, func(after *cdnapi.Position) ([]cdnapi.File, error) {
		return s.ListFiles(t.Context(), cdnapi.FileQuery{Project: project, After: after, Limit: limit})
	}, between)
}

// walkAssets is walkFiles for the assets of region ("" for all).
func walkAssets(t *testing.T, s cdnapi.Store, region string, limit int) []cdnapi.Asset {
	t.Helper()
	return walk(t, "ListAssets", limit, func(after *cdnapi.Position) ([]cdnapi.Asset, error) {
		return s.ListAssets(t.Context(), cdnapi.AssetQuery{Region: region, After: after, Limit: limit})
	}, nil)
}

// walk pages through a list with read (named name in failures), limit at a
// time, each page after the last row of the one before, and returns every
// row it saw. It fails t when a page holds more than limit rows, or when
// the walk does not advance. between, when not nil, runs after each full
// page with its last row.
func walk[T interface{ Position() cdnapi.Position }](t *testing.T, name string, limit int,
	read func(after *cdnapi.Position) ([]T, error), between func(last T)) []T {
	t.Helper()
	var seen []T
	var after *cdnapi.Position
	for pages := 0; ; pages++ {
		if pages > 100_000 {
			t.Fatalf("limit %d: the walk does not end", limit)
		}
		page, err := read(after)
		if err != nil {
			t.Fatalf("limit %d: %s after %v: %v", limit, name, after, err)
		}
		if len(page) > limit {
			t.Fatalf("limit %d: %s returned %d rows", limit, name, len(page))
		}
		seen = append(seen, page...)
		if len(page) < limit {
			return seen
		}
		last := page[len(page)-1]
		p := last.Position()
		if after != nil && Newest(*after, p) >= 0 {
			t.Fatalf("limit %d: the walk does not advance past %v", limit, *after)
		}
		after = &p
		if between != nil {
			between(last)
		}
	}
}

// diffFiles describes the first difference between want and got, or
// returns "" when they are equal. Times must be equal instants, in UTC.
func diffFiles(want, got []cdnapi.File) string {
	for i := range min(len(want), len(got)) {
		w, g := want[i], got[i]
		if w.ID != g.ID || w.Project != g.Project || w.Filename != g.Filename ||
			w.Bytes != g.Bytes || w.Checksum != g.Checksum || !sameTime(w.CreatedAt, g.CreatedAt) {
			return fmt.Sprintf("file %d: got %s, want %s", i, fileString(g), fileString(w))
		}
	}
	if len(want) != len(got) {
		return fmt.Sprintf("got %d files, want %d", len(got), len(want))
	}
	return ""
}

// diffAssets is diffFiles for assets.
func diffAssets(want, got []cdnapi.Asset) string {
	for i := range min(len(want), len(got)) {
		w, g := want[i], got[i]
		if w.ID != g.ID || w.Path != g.Path || w.Bytes != g.Bytes || w.CacheStatus != g.CacheStatus ||
			w.Region != g.Region || !sameTime(w.CreatedAt, g.CreatedAt) {
			return fmt.Sprintf("asset %d: got %s, want %s", i, assetString(g), assetString(w))
		}
	}
	if len(want) != len(got) {
		return fmt.Sprintf("got %d assets, want %d", len(got), len(want))
	}
	return ""
}

// diffRegions is diffFiles for regions.
func diffRegions(want, got []cdnapi.Region) string {
	for i := range min(len(want), len(got)) {
		if want[i] != got[i] {
			return fmt.Sprintf("region %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	if len(want) != len(got) {
		return fmt.Sprintf("got %d regions, want %d", len(got), len(want))
	}
	return ""
}

// sameTime reports whether got is the instant want, in UTC.
func sameTime(want, got time.Time) bool {
	return got.Equal(want) && got.Location() == time.UTC
}

func fileString(f cdnapi.File) string {
	return fmt.Sprintf("{%s %s %s %q %d %s}", f.ID, f.Project, f.CreatedAt.Format(time.RFC3339Nano+" MST"), f.Filename, f.Bytes, f.Checksum)
}

func assetString(a cdnapi.Asset) string {
	return fmt.Sprintf("{%s %s %q %d %s %s}", a.ID, a.CreatedAt.Format(time.RFC3339Nano+" MST"), a.Path, a.Bytes, a.CacheStatus, a.Region)
}

// putFiles, putAssets and putRegions write fixtures or end the test.
func putFiles(t *testing.T, s cdnapi.Store, files []cdnapi.File) {
	t.Helper()
	if err := Writer(s).PutFiles(t.Context(), files); err != nil {
		t.Fatalf("PutFiles: %v", err)
	}
}

func putAssets(t *testing.T, s cdnapi.Store, assets []cdnapi.Asset) {
	t.Helper()
	if err := Writer(s).PutAssets(t.Context(), assets); err != nil {
		t.Fatalf("PutAssets: %v", err)
	}
}

func putRegions(t *testing.T, s cdnapi.Store, regions []cdnapi.Region) {
	t.Helper()
	if err := Writer(s).PutRegions(t.Context(), regions); err != nil {
		t.Fatalf("PutRegions: %v", err)
	}
}

// listFiles returns up to limit files of project from the start, or ends
// the test.
func listFiles(t *testing.T, s cdnapi.Store, project string, limit int) []cdnapi.File {
	t.Helper()
	files, err := s.ListFiles(t.Context(), cdnapi.FileQuery{Project: project, Limit: limit})
	if err != nil {
		t.Fatalf("ListFiles: %v", err)
	}
	return files
}

// listAssets returns up to limit assets of region from the start, or ends
// the test.
func listAssets(t *testing.T, s cdnapi.Store, region string, limit int) []cdnapi.Asset {
	t.Helper()
	assets, err := s.ListAssets(t.Context(), cdnapi.AssetQuery{Region: region, Limit: limit})
	if err != nil {
		t.Fatalf("ListAssets: %v", err)
	}
	return assets
}

// sorted returns a sorted copy of files.
func sorted(files []cdnapi.File) []cdnapi.File {
	out := append([]cdnapi.File(nil), files...)
	SortFiles(out)
	return out
}

// sortedAssets returns a sorted copy of assets.
func sortedAssets(assets []cdnapi.Asset) []cdnapi.Asset {
	out := append([]cdnapi.Asset(nil), assets...)
	SortAssets(out)
	return out
}
