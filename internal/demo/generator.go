package demo

import (
	"iter"
	"math"
	"math/rand/v2"
	"time"

	"github.com/cdnapi/cdnapi"
)

// The spans over which generated records are spread, ending at the
// generator's reference time.
const (
	// FileSpan is how far back file creation times reach.
	FileSpan = 90 * 24 * time.Hour
	// AssetSpan is how far back asset request times reach: assets are the
	// recently requested ones.
	AssetSpan = 3 * 24 * time.Hour
)

// idSuffixLen is the length of the generated part of every ID.
const idSuffixLen = 24

// Generator produces demo records. The records it produces depend only on
// the seed and the reference time it was made with, and on the calls made
// before: files and assets come from separate random streams, so the assets
// of a seed are the same whatever number of files was generated first.
//
// A Generator is not safe for concurrent use.
type Generator struct {
	now     int64 // reference time, unix seconds
	files   *rand.Rand
	assets  *rand.Rand
	product *rand.Zipf // product IDs: a few products are very popular

	fileKey, assetKey uint64 // keys of the ID permutations
	fileSeq, assetSeq uint64 // records produced so far

	buf []byte // scratch space for building strings
}

// NewGenerator returns a Generator for seed whose timestamps fall in the
// spans before now, in whole seconds.
func NewGenerator(seed int64, now time.Time) *Generator {
	s := uint64(seed)
	assets := rand.New(rand.NewPCG(s, 0x617373657473)) // "assets"
	return &Generator{
		now:      now.Unix(),
		files:    rand.New(rand.NewPCG(s, 0x66696c6573)), // "files"
		assets:   assets,
		product:  rand.NewZipf(assets, 1.2, 4, 99999),
		fileKey:  mix64(s ^ 0x9e3779b97f4a7c15),
		assetKey: mix64(s ^ 0xc2b2ae3d27d4eb4f),
		buf:      make([]byte, 0, 128),
	}
}

// Files returns a sequence of n new files of project, oldest first, their
// creation times spread evenly over the FileSpan before the reference time.
//
// Records come oldest first, and IDs sort by creation second, because that
// is how real records arrive: a store then appends to its indexes instead
// of inserting all over them, which makes seeding millions of rows several
// times faster.
//
// The sequence is single-use: each pass draws new records from the
// generator. Stopping early leaves the rest undrawn.
func (g *Generator) Files(project string, n int) iter.Seq[cdnapi.File] {
	return func(yield func(cdnapi.File) bool) {
		for i := range n {
			if !yield(g.file(project, g.spread(g.files, FileSpan, i, n))) {
				return
			}
		}
	}
}

// Assets returns a sequence of n new assets, oldest first, their request
// times spread evenly over the AssetSpan before the reference time. It is
// single-use, like Files.
func (g *Generator) Assets(n int) iter.Seq[cdnapi.Asset] {
	return func(yield func(cdnapi.Asset) bool) {
		for i := range n {
			if !yield(g.asset(g.spread(g.assets, AssetSpan, i, n))) {
				return
			}
		}
	}
}

// file returns a new file of project created at created.
func (g *Generator) file(project string, created time.Time) cdnapi.File {
	r := g.files
	id := g.id(cdnapi.FileIDPrefix, r, created, g.fileKey+g.fileSeq)
	g.fileSeq++
	k := &fileKinds[fileKindPicker.pick(r)]
	name, median, sigma := k.build(g, created)
	return cdnapi.File{
		ID:        id,
		Project:   project,
		CreatedAt: created,
		Filename:  name,
		Bytes:     logNormal(r, median, sigma),
		Checksum:  g.checksum(r),
	}
}

// asset returns a new asset requested at created.
func (g *Generator) asset(created time.Time) cdnapi.Asset {
	r := g.assets
	id := g.id(cdnapi.AssetIDPrefix, r, created, g.assetKey+g.assetSeq)
	g.assetSeq++
	k := &assetKinds[assetKindPicker.pick(r)]
	path, median, sigma := k.build(g)
	return cdnapi.Asset{
		ID:          id,
		CreatedAt:   created,
		Path:        path,
		Bytes:       logNormal(r, median, sigma),
		CacheStatus: k.cache.pick(r),
		Region:      pops[popPicker.pick(r)].region.Code,
	}
}

// spread returns the time of record i of n spread over the span that ends
// at the reference time, in whole seconds UTC. The span is cut into n equal
// slots and record i falls at a random point of slot i: the times are as
// even as independent uniform draws, but they never decrease.
func (g *Generator) spread(r *rand.Rand, span time.Duration, i, n int) time.Time {
	secs := int64(span / time.Second)
	off := (int64(i)*secs + r.Int64N(secs)) / int64(n)
	return time.Unix(g.now-secs+off, 0).UTC()
}

// base62 is the alphabet of ID suffixes, in ASCII order so that IDs sort
// as the numbers they spell.
const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// id returns prefix followed by idSuffixLen base62 characters, laid out
// like a KSUID: 6 characters spell the creation second, most significant
// first, so IDs sort by time; the next 11 spell a keyed permutation of seq,
// which makes the IDs of one generator unique by construction (62^11 >
// 2^64); the last 7 are random.
func (g *Generator) id(prefix string, r *rand.Rand, created time.Time, seq uint64) string {
	b := append(g.buf[:0], prefix...)
	b = appendBase62BE(b, uint64(created.Unix()), 6)
	b = appendBase62(b, mix64(seq), 11)
	b = appendBase62(b, r.Uint64(), 7)
	g.buf = b
	return string(b)
}

// checksum returns "sha256:" and 64 random lower-case hex characters: a
// well-formed digest of content that the demo does not have.
func (g *Generator) checksum(r *rand.Rand) string {
	b := append(g.buf[:0], "sha256:"...)
	for range 4 {
		b = appendHex(b, r.Uint64(), 16)
	}
	g.buf = b
	return string(b)
}

// mix64 is the finaliser of MurmurHash3. Every step is invertible, so it is
// a bijection on uint64: distinct inputs give distinct outputs.
func mix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// appendBase62 appends the n lowest base62 digits of x, least significant
// first. n of 11 spells every uint64 uniquely; the slight bias of taking
// fewer digits of a random x does not matter for IDs.
func appendBase62(b []byte, x uint64, n int) []byte {
	for range n {
		b = append(b, base62[x%62])
		x /= 62
	}
	return b
}

// appendBase62BE appends the n lowest base62 digits of x, most significant
// first, so that the digits sort as the numbers do.
func appendBase62BE(b []byte, x uint64, n int) []byte {
	b = append(b, make([]byte, n)...)
	for i := len(b) - 1; i >= len(b)-n; i-- {
		b[i] = base62[x%62]
		x /= 62
	}
	return b
}

// appendHex appends the n lowest hex digits of x, most significant first.
func appendHex(b []byte, x uint64, n int) []byte {
	const digits = "0123456789abcdef"
	for i := n - 1; i >= 0; i-- {
		b = append(b, digits[(x>>(4*uint(i)))&0xf])
	}
	return b
}

// appendPadded appends x in decimal, zero-padded to width digits.
func appendPadded(b []byte, x, width int) []byte {
	var d [20]byte
	i := len(d)
	for x > 0 || i > len(d)-width {
		i--
		d[i] = byte('0' + x%10)
		x /= 10
	}
	return append(b, d[i:]...)
}

// appendDate appends t's date as YYYY-MM-DD.
func appendDate(b []byte, t time.Time) []byte {
	y, m, d := t.Date()
	b = appendPadded(b, y, 4)
	b = append(b, '-')
	b = appendPadded(b, int(m), 2)
	b = append(b, '-')
	return appendPadded(b, d, 2)
}

// logNormal returns a size in bytes around median: sizes of real files of
// one kind are roughly log-normal. Draws are clamped at four standard
// deviations so that no demo file is absurdly large.
func logNormal(r *rand.Rand, median, sigma float64) int64 {
	z := max(-4, min(4, r.NormFloat64()))
	return int64(median * math.Exp(sigma*z))
}

// picker draws indexes with fixed relative weights in constant time, from a
// table holding each index as many times as its weight. Weights are small
// integers, so the table stays small.
type picker struct {
	table []uint8
}

// newPicker returns a picker of indexes 0..len(weights)-1.
func newPicker(weights ...int) picker {
	var p picker
	for i, w := range weights {
		for range w {
			p.table = append(p.table, uint8(i))
		}
	}
	return p
}

// pickerOf returns a picker of the indexes of items, each weighted by
// weight(item).
func pickerOf[T any](items []T, weight func(T) int) picker {
	w := make([]int, len(items))
	for i, it := range items {
		w[i] = weight(it)
	}
	return newPicker(w...)
}

// pick draws an index.
func (p picker) pick(r *rand.Rand) int {
	return int(p.table[r.IntN(len(p.table))])
}

// popPicker draws points of presence by their share of the traffic.
var popPicker = pickerOf(pops, func(p pop) int { return p.weight })
