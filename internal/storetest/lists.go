package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
)

func testEmpty(t *testing.T, s cdnapi.Store) {
	ctx := t.Context()
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	if files := listFiles(t, s, "default", cdnapi.MaxLimit); len(files) != 0 {
		t.Errorf("ListFiles: %d files in an empty store", len(files))
	}
	for _, region := range []string{"", "FRA1"} {
		if assets := listAssets(t, s, region, cdnapi.MaxLimit); len(assets) != 0 {
			t.Errorf("ListAssets(%q): %d assets in an empty store", region, len(assets))
		}
	}
	regions, err := s.ListRegions(ctx)
	if err != nil || len(regions) != 0 {
		t.Errorf("ListRegions = %d regions, %v; want none", len(regions), err)
	}
	overrides, err := s.ComponentOverrides(ctx)
	if err != nil || len(overrides) != 0 {
		t.Errorf("ComponentOverrides = %d, %v; want none", len(overrides), err)
	}
}

func testFilesOrder(t *testing.T, s cdnapi.Store) {
	files := Files(90, "default", 1) // in no particular order
	putFiles(t, s, files)
	if d := diffFiles(sorted(files), listFiles(t, s, "default", cdnapi.MaxLimit)); d != "" {
		t.Errorf("ListFiles, newest first: %s", d)
	}
}

func testAssetsOrder(t *testing.T, s cdnapi.Store) {
	assets := Assets(90, RegionCodes(Regions()), 2)
	putAssets(t, s, assets)
	if d := diffAssets(sortedAssets(assets), listAssets(t, s, "", cdnapi.MaxLimit)); d != "" {
		t.Errorf("ListAssets, newest first: %s", d)
	}
}

func testRegionsOrder(t *testing.T, s cdnapi.Store) {
	regions := Regions()
	putRegions(t, s, regions)
	got, err := s.ListRegions(t.Context())
	if err != nil {
		t.Fatalf("ListRegions: %v", err)
	}
	want := append([]cdnapi.Region(nil), regions...)
	SortRegions(want)
	if d := diffRegions(want, got); d != "" {
		t.Errorf("ListRegions, by code: %s", d)
	}
	for _, r := range regions {
		got, err := s.Region(t.Context(), r.Code)
		if err != nil || got != r {
			t.Errorf("Region(%q) = %+v, %v; want %+v", r.Code, got, err, r)
		}
	}
}

func testRegionUnknown(t *testing.T, s cdnapi.Store) {
	putRegions(t, s, Regions())
	for _, code := range []string{"XXX9", "fra1", "", "FRA1 "} {
		if _, err := s.Region(t.Context(), code); !errors.Is(err, cdnapi.ErrNotFound) {
			t.Errorf("Region(%q) error = %v, want ErrNotFound", code, err)
		}
	}
}

// testFilesWalk walks a few hundred files, with many sharing a created_at,
// at every limit a client may ask for.
func testFilesWalk(t *testing.T, s cdnapi.Store) {
	files := Files(300, "default", 3)
	putFiles(t, s, files)
	putFiles(t, s, Files(40, "other", 4)) // must never show up
	want := sorted(files)
	for limit := 1; limit <= cdnapi.MaxLimit+1; limit++ {
		if d := diffFiles(want, walkFiles(t, s, "default", limit, nil)); d != "" {
			t.Fatalf("walk with limit %d: %s", limit, d)
		}
	}
}

func testAssetsWalk(t *testing.T, s cdnapi.Store) {
	codes := RegionCodes(Regions())
	assets := Assets(300, codes[:3], 5)
	putAssets(t, s, assets)
	all := sortedAssets(assets)
	var fra []cdnapi.Asset
	for _, a := range all {
		if a.Region == codes[1] {
			fra = append(fra, a)
		}
	}
	for limit := 1; limit <= cdnapi.MaxLimit+1; limit++ {
		if d := diffAssets(all, walkAssets(t, s, "", limit)); d != "" {
			t.Fatalf("walk of all regions with limit %d: %s", limit, d)
		}
		if d := diffAssets(fra, walkAssets(t, s, codes[1], limit)); d != "" {
			t.Fatalf("walk of %s with limit %d: %s", codes[1], limit, d)
		}
	}
}

// testWalkWithInserts inserts files newer than, older than, and tied with
// the page just read while a walk is under way. The files that were there
// when the walk began must each be seen exactly once, and what the walk
// sees must stay in list order.
func testWalkWithInserts(t *testing.T, s cdnapi.Store) {
	before := Files(200, "default", 6)
	putFiles(t, s, before)
	for _, limit := range []int{1, 7, 20, 100} {
		t.Run(fmt.Sprint("limit", limit), func(t *testing.T) {
			page := 0
			seen := walkFiles(t, s, "default", limit, func(last cdnapi.File) {
				page++
				if page > 25 {
					return // each round adds a row right behind the page, so stop adding
				}
				fresh := Files(4, "default", uint64(1000*limit+page))
				fresh[0].CreatedAt = Epoch.Add(time.Duration(page) * time.Hour) // newer than all
				fresh[1].CreatedAt = last.CreatedAt                             // tied with the last row
				fresh[2].CreatedAt = last.CreatedAt.Add(-time.Second)           // just behind it
				fresh[3].CreatedAt = Epoch.AddDate(-1, 0, -page)                // older than all
				putFiles(t, s, fresh)
			})
			counts := make(map[string]int, len(seen))
			for i, f := range seen {
				counts[f.ID]++
				if i > 0 && Newest(seen[i-1].Position(), f.Position()) >= 0 {
					t.Fatalf("row %d: %s does not come after %s", i, fileString(f), fileString(seen[i-1]))
				}
			}
			for _, f := range before {
				if counts[f.ID] != 1 {
					t.Errorf("file %s seen %d times, want once", f.ID, counts[f.ID])
				}
			}
		})
	}
}

// testAfterBetweenRows pages after positions that name no row: a client's
// cursor outlives the row it points at.
func testAfterBetweenRows(t *testing.T, s cdnapi.Store) {
	files := Files(60, "default", 7)
	putFiles(t, s, files)
	want := sorted(files)
	for i, f := range want {
		// "~" sorts after every ID character: just before f in the list.
		after := cdnapi.Position{CreatedAt: f.CreatedAt, ID: f.ID + "~"}
		got, err := s.ListFiles(t.Context(), cdnapi.FileQuery{Project: "default", After: &after, Limit: cdnapi.MaxLimit})
		if err != nil {
			t.Fatalf("ListFiles: %v", err)
		}
		if d := diffFiles(want[i:], got); d != "" {
			t.Fatalf("after a position just before row %d: %s", i, d)
		}
	}
}

func testRegionFilter(t *testing.T, s cdnapi.Store) {
	regions := Regions()
	putRegions(t, s, regions)
	codes := RegionCodes(regions)
	assets := Assets(120, codes[:4], 8) // the fifth region serves nothing
	putAssets(t, s, assets)
	all := sortedAssets(assets)
	for _, code := range codes {
		var want []cdnapi.Asset
		for _, a := range all {
			if a.Region == code {
				want = append(want, a)
			}
		}
		if d := diffAssets(want, listAssets(t, s, code, cdnapi.MaxLimit)); d != "" {
			t.Errorf("ListAssets(%s): %s", code, d)
		}
	}
	if got := listAssets(t, s, "XXX9", cdnapi.MaxLimit); len(got) != 0 {
		t.Errorf("ListAssets(XXX9) = %d assets, want none", len(got))
	}
}

func testProjectScoping(t *testing.T, s cdnapi.Store) {
	a, b := Files(50, "alpha", 9), Files(50, "beta", 10)
	putFiles(t, s, append(append([]cdnapi.File(nil), a...), b...))
	for _, tc := range []struct {
		project string
		want    []cdnapi.File
	}{
		{"alpha", sorted(a)},
		{"beta", sorted(b)},
		{"gamma", nil},
		{"", nil},
		{"ALPHA", nil},
	} {
		if d := diffFiles(tc.want, listFiles(t, s, tc.project, cdnapi.MaxLimit)); d != "" {
			t.Errorf("ListFiles(%q): %s", tc.project, d)
		}
	}
	// A position taken from one project's list pages the other's by place.
	from := sorted(a)[10]
	after := from.Position()
	got, err := s.ListFiles(t.Context(), cdnapi.FileQuery{Project: "beta", After: &after, Limit: cdnapi.MaxLimit})
	if err != nil {
		t.Fatalf("ListFiles: %v", err)
	}
	for _, f := range got {
		if f.Project != "beta" || Newest(after, f.Position()) >= 0 {
			t.Fatalf("ListFiles(beta) after %v returned %s", after, fileString(f))
		}
	}
}

func testLargeLimit(t *testing.T, s cdnapi.Store) {
	files := Files(150, "default", 11)
	putFiles(t, s, files)
	want := sorted(files)
	for _, limit := range []int{149, 150, 151, 1000, 1 << 30} {
		got := listFiles(t, s, "default", limit)
		n := min(limit, len(want))
		if d := diffFiles(want[:n], got); d != "" {
			t.Errorf("limit %d: %s", limit, d)
		}
	}
	assets := Assets(150, []string{"FRA1"}, 12)
	putAssets(t, s, assets)
	if got := listAssets(t, s, "", 1<<30); len(got) != len(assets) {
		t.Errorf("ListAssets with limit 1<<30: %d assets, want %d", len(got), len(assets))
	}
}

// testLimitBelowOne checks that a limit below 1, which the HTTP edge never
// passes, is refused rather than read as "no limit".
func testLimitBelowOne(t *testing.T, s cdnapi.Store) {
	putFiles(t, s, Files(5, "default", 13))
	putAssets(t, s, Assets(5, []string{"FRA1"}, 14))
	for _, limit := range []int{0, -1} {
		if files, err := s.ListFiles(t.Context(), cdnapi.FileQuery{Project: "default", Limit: limit}); err == nil {
			t.Errorf("ListFiles with limit %d = %d files, want an error", limit, len(files))
		}
		if assets, err := s.ListAssets(t.Context(), cdnapi.AssetQuery{Limit: limit}); err == nil {
			t.Errorf("ListAssets with limit %d = %d assets, want an error", limit, len(assets))
		}
	}
}

// testTies puts files that all share one created_at, with IDs that differ
// only in case and digits: the list orders them by ID, byte-wise, and every
// walk agrees. An engine that compares IDs under a linguistic collation
// fails here.
func testTies(t *testing.T, s cdnapi.Store) {
	ids := []string{"fil_a", "fil_B", "fil_0", "fil_Z", "fil_z", "fil_9", "fil_A", "fil_b", "fil_aa", "fil_a0", "fil_aZ"}
	files := Files(len(ids), "default", 15)
	for i := range files {
		files[i].ID = ids[i]
		files[i].CreatedAt = Epoch
	}
	files = append(files, Files(100, "default", 16)...)
	for i := range files[len(ids):] {
		files[len(ids)+i].CreatedAt = Epoch
	}
	putFiles(t, s, files)
	want := sorted(files)
	wantShort := []string{"fil_z", "fil_b", "fil_aa", "fil_aZ", "fil_a0", "fil_a", "fil_Z", "fil_B", "fil_A", "fil_9", "fil_0"}
	var short []string
	for _, f := range listFiles(t, s, "default", len(files)) {
		if len(f.ID) <= len("fil_aa") {
			short = append(short, f.ID)
		}
	}
	if fmt.Sprint(short) != fmt.Sprint(wantShort) {
		t.Errorf("byte-wise ID order: got %v, want %v", short, wantShort)
	}
	for _, limit := range []int{1, 2, 3, 10, 37, 100} {
		if d := diffFiles(want, walkFiles(t, s, "default", limit, nil)); d != "" {
			t.Fatalf("walk of tied files with limit %d: %s", limit, d)
		}
	}
}

// testWholeSeconds puts times with fractions of a second and in other
// zones: the store keeps whole seconds and returns UTC, so the positions in
// cursors, which hold whole seconds, fall exactly on rows.
func testWholeSeconds(t *testing.T, s cdnapi.Store) {
	zone := time.FixedZone("UTC+5:30", 5*3600+1800)
	base := time.Date(2026, 3, 1, 17, 30, 7, 0, zone)
	files := Files(4, "default", 17)
	files[0].CreatedAt = base.Add(900 * time.Millisecond)
	files[1].CreatedAt = base.Add(100 * time.Millisecond)
	files[2].CreatedAt = base.Add(999_999_999 * time.Nanosecond)
	files[3].CreatedAt = base.Add(time.Second + time.Nanosecond)
	putFiles(t, s, files)
	want := sorted(files)
	for i := range want {
		want[i].CreatedAt = want[i].CreatedAt.Truncate(time.Second).UTC()
	}
	SortFiles(want)
	if d := diffFiles(want, listFiles(t, s, "default", 10)); d != "" {
		t.Errorf("ListFiles: %s", d)
	}
	if d := diffFiles(want, walkFiles(t, s, "default", 1, nil)); d != "" {
		t.Errorf("walk with limit 1: %s", d)
	}

	asset := Assets(1, []string{"FRA1"}, 18)
	asset[0].CreatedAt = base.Add(500 * time.Millisecond)
	putAssets(t, s, asset)
	got := listAssets(t, s, "", 1)
	if len(got) != 1 || !sameTime(base.Truncate(time.Second), got[0].CreatedAt) {
		t.Errorf("ListAssets = %v, want created_at %s", got, base.Truncate(time.Second).UTC())
	}
}

func testUnicode(t *testing.T, s cdnapi.Store) {
	names := []string{
		"résumé final (2).pdf",
		"日本語のファイル名.txt",
		"emoji 🎉🚀 party.png",
		"e\u0301 combining.txt", // decomposed é must not be normalised
		"العربية.docx",
		`quotes "double" 'single' \back\slash%_percent.csv`,
		"tab\tand\nnewline.log",
		"Ωmega·Ünïcödé—dash….md",
		"last code point \U0010FFFF.bin",
	}
	files := Files(len(names), "projekt-ü", 19)
	for i := range files {
		files[i].Filename = names[i]
	}
	putFiles(t, s, files)
	if d := diffFiles(sorted(files), listFiles(t, s, "projekt-ü", cdnapi.MaxLimit)); d != "" {
		t.Errorf("ListFiles: %s", d)
	}
	assets := Assets(2, []string{"FRA1"}, 20)
	assets[0].Path = "/img/日本/ü%20space.webp"
	assets[1].Path = "/a/🎉?q=ü&x=1"
	putAssets(t, s, assets)
	if d := diffAssets(sortedAssets(assets), listAssets(t, s, "FRA1", cdnapi.MaxLimit)); d != "" {
		t.Errorf("ListAssets: %s", d)
	}
}
