package storetest

import (
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/cdnapi/cdnapi"
)

// AssetLog makes assets as an edge's request log delivers them, for
// benchmarks of bulk writes: in time order, perSecond of them to a second,
// each with an ID of 20 characters after "ast_". The IDs are either random,
// as request IDs in real logs look, or time-sortable: six characters of the
// creation second, then random ones, like KSUIDs and the IDs of cdnapi seed.
// Random IDs are the hard case for a store, whose ID index then takes each
// insert at a random place.
type AssetLog struct {
	rng       *rand.Rand
	start     time.Time
	perSecond int
	sortable  bool
	regions   []string
	n         int
}

// NewAssetLog returns a log that begins at start, the same for the same
// seed.
func NewAssetLog(seed uint64, start time.Time, perSecond int, sortable bool, regions []string) *AssetLog {
	return &AssetLog{
		rng:       rand.New(rand.NewPCG(seed, 0x1065)),
		start:     start.UTC().Truncate(time.Second),
		perSecond: max(1, perSecond),
		sortable:  sortable,
		regions:   regions,
	}
}

// Fill overwrites batch with the next len(batch) assets of the log.
func (l *AssetLog) Fill(batch []cdnapi.Asset) {
	dirs := [...]string{"/static/js/", "/static/css/", "/images/products/", "/fonts/", "/video/hls/"}
	exts := [...]string{".js", ".css", ".webp", ".woff2", ".ts"}
	id := make([]byte, 0, len(cdnapi.AssetIDPrefix)+20)
	for i := range batch {
		created := l.start.Add(time.Duration(l.n/l.perSecond) * time.Second)
		l.n++
		id = append(id[:0], cdnapi.AssetIDPrefix...)
		random := 20
		if l.sortable {
			sec := created.Unix()
			for shift := int64(62 * 62 * 62 * 62 * 62); shift > 0; shift /= 62 {
				id = append(id, idAlphabet[sec/shift%62])
			}
			random -= 6
		}
		for range random {
			id = append(id, idAlphabet[l.rng.IntN(len(idAlphabet))])
		}
		status := cdnapi.CacheHit
		if l.rng.IntN(10) < 2 {
			status = cdnapi.CacheStatuses[l.rng.IntN(len(cdnapi.CacheStatuses))]
		}
		d := l.rng.IntN(len(dirs))
		batch[i] = cdnapi.Asset{
			ID:          string(id),
			CreatedAt:   created,
			Path:        dirs[d] + "app." + strconv.FormatUint(l.rng.Uint64()>>32, 16) + exts[d],
			Bytes:       l.rng.Int64N(5 << 20),
			CacheStatus: status,
			Region:      l.regions[l.rng.IntN(len(l.regions))],
		}
	}
}
