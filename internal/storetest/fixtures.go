package storetest

import (
	"cmp"
	"encoding/hex"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cdnapi/cdnapi"
)

// Epoch is the newest created_at a fixture gets. It is fixed so that
// fixtures are the same on every run and every machine.
var Epoch = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

// fixtureSpan is how far back from Epoch fixtures spread.
const fixtureSpan = 7 * 24 * time.Hour

// idAlphabet is the alphabet of fixture IDs. It mixes cases and digits so
// that the suite notices an engine that orders IDs other than byte-wise
// (digits, then upper case, then lower case).
const idAlphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// Files returns n files of project, the same for the same seed. Their
// created_at are whole seconds within a week before Epoch, drawn from about
// n/3 distinct instants so that many files share one; their IDs are unique
// across every Files and Assets call with distinct seeds.
func Files(n int, project string, seed uint64) []cdnapi.File {
	rng := rand.New(rand.NewPCG(seed, 0xf11e5))
	instants := newInstants(rng, n)
	stems := []string{"invoice", "report", "backup", "photo", "IMG_", "contract", "slides", "dataset", "notes", "logo"}
	exts := []string{".pdf", ".csv", ".tar.gz", ".jpg", ".png", ".docx", ".mp4", ".json", ".zip", ".txt"}
	files := make([]cdnapi.File, n)
	for i := range files {
		var sum [32]byte
		fillRandom(rng, sum[:])
		files[i] = cdnapi.File{
			ID:        newID(rng, cdnapi.FileIDPrefix, seed, i),
			Project:   project,
			CreatedAt: instants(),
			Filename:  stems[rng.IntN(len(stems))] + "-" + strconv.Itoa(rng.IntN(10000)) + exts[rng.IntN(len(exts))],
			Bytes:     rng.Int64N(50 << 20),
			Checksum:  "sha256:" + hex.EncodeToString(sum[:]),
		}
	}
	return files
}

// Assets returns n assets served by the given region codes, the same for
// the same seed. Their times are spread like those of Files. Most are HIT,
// as on a warm CDN.
func Assets(n int, regions []string, seed uint64) []cdnapi.Asset {
	rng := rand.New(rand.NewPCG(seed, 0xa55e7))
	instants := newInstants(rng, n)
	dirs := []string{"/static/js/", "/static/css/", "/img/", "/fonts/", "/video/"}
	exts := []string{".js", ".css", ".webp", ".woff2", ".m3u8"}
	assets := make([]cdnapi.Asset, n)
	for i := range assets {
		d := rng.IntN(len(dirs))
		status := cdnapi.CacheHit
		if rng.IntN(10) < 3 {
			status = cdnapi.CacheStatuses[rng.IntN(len(cdnapi.CacheStatuses))]
		}
		var h [4]byte
		fillRandom(rng, h[:])
		assets[i] = cdnapi.Asset{
			ID:          newID(rng, cdnapi.AssetIDPrefix, seed, i),
			CreatedAt:   instants(),
			Path:        dirs[d] + "app." + hex.EncodeToString(h[:]) + exts[d],
			Bytes:       rng.Int64N(5 << 20),
			CacheStatus: status,
			Region:      regions[rng.IntN(len(regions))],
		}
	}
	return assets
}

// Regions returns a small fixed set of regions, not ordered by code.
func Regions() []cdnapi.Region {
	return []cdnapi.Region{
		{Code: "NRT1", Name: "Tokyo", Zone: "ap-northeast", Country: "JP", Status: cdnapi.StatusOperational},
		{Code: "FRA1", Name: "Frankfurt", Zone: "eu-central", Country: "DE", Status: cdnapi.StatusOperational},
		{Code: "GRU1", Name: "São Paulo", Zone: "sa-east", Country: "BR", Status: cdnapi.StatusDegradedPerformance},
		{Code: "IAD1", Name: "Ashburn", Zone: "us-east", Country: "US", Status: cdnapi.StatusOperational},
		{Code: "SYD1", Name: "Sydney", Zone: "ap-southeast", Country: "AU", Status: cdnapi.StatusUnderMaintenance},
	}
}

// RegionCodes returns the codes of regions, in their order.
func RegionCodes(regions []cdnapi.Region) []string {
	codes := make([]string, len(regions))
	for i, r := range regions {
		codes[i] = r.Code
	}
	return codes
}

// Newest orders positions as the lists do: created_at descending, then ID
// descending, comparing IDs byte-wise. It returns a negative number when a
// comes first.
func Newest(a, b cdnapi.Position) int {
	if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
		return c
	}
	return strings.Compare(b.ID, a.ID)
}

// SortFiles sorts files in list order, newest first.
func SortFiles(files []cdnapi.File) {
	slices.SortFunc(files, func(a, b cdnapi.File) int { return Newest(a.Position(), b.Position()) })
}

// SortAssets sorts assets in list order, newest first.
func SortAssets(assets []cdnapi.Asset) {
	slices.SortFunc(assets, func(a, b cdnapi.Asset) int { return Newest(a.Position(), b.Position()) })
}

// SortRegions sorts regions by code, the order of the regions list.
func SortRegions(regions []cdnapi.Region) {
	slices.SortFunc(regions, func(a, b cdnapi.Region) int { return cmp.Compare(a.Code, b.Code) })
}

// newInstants returns a source of created_at values for n rows: whole
// seconds within fixtureSpan before Epoch, from about n/3 distinct instants,
// so that ties are common at any n.
func newInstants(rng *rand.Rand, n int) func() time.Time {
	distinct := max(1, n/3)
	step := max(time.Second, (fixtureSpan / time.Duration(distinct)).Truncate(time.Second))
	return func() time.Time {
		return Epoch.Add(-time.Duration(rng.IntN(distinct)) * step)
	}
}

// newID returns prefix, 10 random characters, i in 6 base-62 digits and
// then the seed in base 62: the random part scatters IDs over the key space
// as real ones are, and the fixed-width tail makes them unique.
func newID(rng *rand.Rand, prefix string, seed uint64, i int) string {
	b := make([]byte, 0, len(prefix)+30)
	b = append(b, prefix...)
	for range 10 {
		b = append(b, idAlphabet[rng.IntN(len(idAlphabet))])
	}
	v := uint64(i)
	for range 6 {
		b = append(b, idAlphabet[v%62])
		v /= 62
	}
	for {
		b = append(b, idAlphabet[seed%62])
		if seed /= 62; seed == 0 {
			return string(b)
		}
	}
}

func fillRandom(rng *rand.Rand, b []byte) {
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
}
