package demo

import (
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/cdnapi/cdnapi"
)

var (
	checksumRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	zoneRE     = regexp.MustCompile(`^[a-z]+-[a-z]+$`)
	countryRE  = regexp.MustCompile(`^[A-Z]{2}$`)
)

// testNow is an arbitrary reference time with a fraction of a second, which
// the generator must not let into timestamps.
var testNow = time.Date(2026, 11, 20, 14, 3, 7, 250_000_000, time.UTC)

func files(g *Generator, n int) []cdnapi.File {
	return slices.Collect(g.Files("default", n))
}

func assets(g *Generator, n int) []cdnapi.Asset {
	return slices.Collect(g.Assets(n))
}

func TestRegions(t *testing.T) {
	rs := Regions()
	if len(rs) < 16 {
		t.Fatalf("got %d regions, want at least 16", len(rs))
	}
	codes := map[string]bool{}
	for _, r := range rs {
		if !cdnapi.ValidRegionCode(r.Code) || codes[r.Code] {
			t.Errorf("region code %q is malformed or repeated", r.Code)
		}
		codes[r.Code] = true
		if r.Name == "" || !zoneRE.MatchString(r.Zone) || !countryRE.MatchString(r.Country) {
			t.Errorf("region %s: name %q, zone %q, country %q do not have the contract's shapes", r.Code, r.Name, r.Zone, r.Country)
		}
		if r.Status != cdnapi.StatusOperational {
			t.Errorf("region %s: status %q, want operational", r.Code, r.Status)
		}
	}
	rs[0].Code = "XXX9"
	if Regions()[0].Code == "XXX9" {
		t.Error("Regions returned shared storage: a caller's change leaked into the next call")
	}
}

func TestGeneratorIsDeterministic(t *testing.T) {
	tests := []struct {
		name      string
		seedA     int64
		nowA      time.Time
		seedB     int64
		nowB      time.Time
		wantEqual bool
	}{
		{"same seed and time", 42, testNow, 42, testNow, true},
		{"same seed, time differing below a second", 42, testNow, 42, testNow.Truncate(time.Second), true},
		{"other seed", 42, testNow, 43, testNow, false},
		{"other time", 42, testNow, 42, testNow.Add(time.Hour), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := NewGenerator(tt.seedA, tt.nowA), NewGenerator(tt.seedB, tt.nowB)
			fa, fb := files(a, 500), files(b, 500)
			aa, ab := assets(a, 500), assets(b, 500)
			if got := reflect.DeepEqual(fa, fb); got != tt.wantEqual {
				t.Errorf("files equal = %v, want %v", got, tt.wantEqual)
			}
			if got := reflect.DeepEqual(aa, ab); got != tt.wantEqual {
				t.Errorf("assets equal = %v, want %v", got, tt.wantEqual)
			}
		})
	}
}

func TestGeneratorSeedsShareNoIDs(t *testing.T) {
	a, b := NewGenerator(1, testNow), NewGenerator(2, testNow)
	seen := map[string]bool{}
	for _, f := range files(a, 2000) {
		seen[f.ID] = true
	}
	for _, f := range files(b, 2000) {
		if seen[f.ID] {
			t.Fatalf("seeds 1 and 2 both generated %s", f.ID)
		}
	}
}

// Assets come from their own stream, so the number of files seeded first
// does not change them.
func TestAssetsDoNotDependOnFiles(t *testing.T) {
	a, b := NewGenerator(7, testNow), NewGenerator(7, testNow)
	files(b, 1234)
	if !reflect.DeepEqual(assets(a, 300), assets(b, 300)) {
		t.Error("the assets changed with the number of files generated before them")
	}
}

// Records come oldest first and their IDs sort by creation second, so
// stores append to their indexes.
func TestRecordsComeOldestFirst(t *testing.T) {
	g := NewGenerator(6, testNow)
	fs, as := files(g, 5000), assets(g, 5000)
	type record struct {
		id      string
		created time.Time
	}
	type list struct {
		records []record
		span    time.Duration
	}
	var fr, ar []record
	for _, f := range fs {
		fr = append(fr, record{f.ID, f.CreatedAt})
	}
	for _, a := range as {
		ar = append(ar, record{a.ID, a.CreatedAt})
	}
	for _, l := range []list{{fr, FileSpan}, {ar, AssetSpan}} {
		rs := l.records
		for i := 1; i < len(rs); i++ {
			prev, cur := rs[i-1], rs[i]
			if cur.created.Before(prev.created) {
				t.Fatalf("%s (%v) comes after the newer %s (%v)", cur.id, cur.created, prev.id, prev.created)
			}
			if cur.created.After(prev.created) && cur.id[4:10] <= prev.id[4:10] {
				t.Fatalf("%s, created later, does not sort after %s", cur.id, prev.id)
			}
		}
		// Spread, not bunched: the oldest and newest are near the ends
		// of the span.
		if span := rs[len(rs)-1].created.Sub(rs[0].created); span < l.span*99/100 {
			t.Errorf("records span only %v of %v", span, l.span)
		}
	}
}

func TestSequenceStopsEarly(t *testing.T) {
	g := NewGenerator(8, testNow)
	n := 0
	for range g.Files("default", 100) {
		n++
		if n == 3 {
			break
		}
	}
	for range g.Assets(100) {
		n++
		if n == 5 {
			break
		}
	}
	if n != 5 {
		t.Errorf("took %d records, want 5", n)
	}
}

func TestFilesAreValid(t *testing.T) {
	const n = 20000
	g := NewGenerator(3, testNow)
	ids := make(map[string]bool, n)
	unicodeNames := 0
	for _, f := range files(g, n) {
		if !cdnapi.ValidID(cdnapi.FileIDPrefix, f.ID) || len(f.ID) != len(cdnapi.FileIDPrefix)+idSuffixLen {
			t.Fatalf("malformed file ID %q", f.ID)
		}
		if ids[f.ID] {
			t.Fatalf("file ID %s generated twice", f.ID)
		}
		ids[f.ID] = true
		if f.Project != "default" {
			t.Fatalf("file %s: project %q, want default", f.ID, f.Project)
		}
		if !checksumRE.MatchString(f.Checksum) {
			t.Fatalf("file %s: malformed checksum %q", f.ID, f.Checksum)
		}
		if f.Filename == "" || !utf8.ValidString(f.Filename) || strings.ContainsAny(f.Filename, "/\\\x00") {
			t.Fatalf("file %s: implausible filename %q", f.ID, f.Filename)
		}
		if f.Bytes < 0 {
			t.Fatalf("file %s (%s): negative size %d", f.ID, f.Filename, f.Bytes)
		}
		checkTime(t, f.ID, f.CreatedAt, FileSpan)
		if utf8.RuneCountInString(f.Filename) != len(f.Filename) {
			unicodeNames++
		}
	}
	if unicodeNames == 0 {
		t.Error("no file has a non-ASCII name")
	}
}

func TestAssetsAreValid(t *testing.T) {
	const n = 20000
	g := NewGenerator(4, testNow)
	regions := map[string]bool{}
	for _, r := range Regions() {
		regions[r.Code] = true
	}
	ids := make(map[string]bool, n)
	for _, a := range assets(g, n) {
		if !cdnapi.ValidID(cdnapi.AssetIDPrefix, a.ID) || len(a.ID) != len(cdnapi.AssetIDPrefix)+idSuffixLen {
			t.Fatalf("malformed asset ID %q", a.ID)
		}
		if ids[a.ID] {
			t.Fatalf("asset ID %s generated twice", a.ID)
		}
		ids[a.ID] = true
		if !strings.HasPrefix(a.Path, "/") || strings.ContainsAny(a.Path, " ?#\x00") {
			t.Fatalf("asset %s: implausible path %q", a.ID, a.Path)
		}
		if !a.CacheStatus.Valid() {
			t.Fatalf("asset %s: invalid cache status %q", a.ID, a.CacheStatus)
		}
		uncached := a.CacheStatus == cdnapi.CacheDynamic || a.CacheStatus == cdnapi.CacheBypass
		if api := strings.HasPrefix(a.Path, "/api/"); api != uncached {
			t.Fatalf("asset %s: path %s answered %s: API paths, and only they, bypass the cache", a.ID, a.Path, a.CacheStatus)
		}
		if !regions[a.Region] {
			t.Fatalf("asset %s: region %q is not a demo region", a.ID, a.Region)
		}
		if a.Bytes < 0 {
			t.Fatalf("asset %s (%s): negative size %d", a.ID, a.Path, a.Bytes)
		}
		checkTime(t, a.ID, a.CreatedAt, AssetSpan)
	}
}

// checkTime fails the test unless ts is whole seconds UTC within the span
// before testNow.
func checkTime(t *testing.T, id string, ts time.Time, span time.Duration) {
	t.Helper()
	now := testNow.Truncate(time.Second)
	if ts.Location() != time.UTC || ts.Nanosecond() != 0 || ts.After(now) || ts.Before(now.Add(-span)) {
		t.Fatalf("%s: timestamp %v is not whole seconds UTC within %v before %v", id, ts, span, now)
	}
}

func TestAssetMixIsRealistic(t *testing.T) {
	const n = 50000
	count := map[cdnapi.CacheStatus]int{}
	perRegion := map[string]int{}
	for _, a := range assets(NewGenerator(5, testNow), n) {
		count[a.CacheStatus]++
		perRegion[a.Region]++
	}
	if hit := float64(count[cdnapi.CacheHit]) / n; hit < 0.7 || hit > 0.9 {
		t.Errorf("HIT share %.2f, want mostly HIT (0.7 to 0.9)", hit)
	}
	for _, s := range cdnapi.CacheStatuses {
		if count[s] == 0 {
			t.Errorf("no asset has cache status %s", s)
		}
		if s != cdnapi.CacheHit && count[s] >= count[cdnapi.CacheHit] {
			t.Errorf("%s (%d) is not rarer than HIT (%d)", s, count[s], count[cdnapi.CacheHit])
		}
	}
	for _, r := range Regions() {
		if perRegion[r.Code] == 0 {
			t.Errorf("region %s served no asset", r.Code)
		}
	}
	if perRegion["IAD1"] <= perRegion["JNB1"] {
		t.Errorf("IAD1 served %d assets, JNB1 %d: bigger PoPs should serve more", perRegion["IAD1"], perRegion["JNB1"])
	}
}

func TestAppendPadded(t *testing.T) {
	tests := []struct {
		x, width int
		want     string
	}{
		{0, 1, "0"},
		{7, 1, "7"},
		{7, 4, "0007"},
		{4821, 4, "4821"},
		{123456, 4, "123456"},
		{2026, 4, "2026"},
	}
	for _, tt := range tests {
		if got := string(appendPadded(nil, tt.x, tt.width)); got != tt.want {
			t.Errorf("appendPadded(%d, %d) = %q, want %q", tt.x, tt.width, got, tt.want)
		}
	}
}

func BenchmarkFiles(b *testing.B) {
	g := NewGenerator(1, testNow)
	b.ReportAllocs()
	for range g.Files("default", b.N) {
	}
}

func BenchmarkAssets(b *testing.B) {
	g := NewGenerator(1, testNow)
	b.ReportAllocs()
	for range g.Assets(b.N) {
	}
}
