package demo

import (
	"math/rand/v2"

	"github.com/cdnapi/cdnapi"
)

// assetKind is one kind of request a CDN serves: it builds a request path,
// gives the median size and spread of the responses, and how the cache
// tends to answer it.
type assetKind struct {
	weight int
	build  func(g *Generator) (path string, median, sigma float64)
	cache  *cacheMix
}

// cacheMix draws cache results with fixed shares.
type cacheMix struct {
	statuses []cdnapi.CacheStatus
	picker   picker
}

// newCacheMix returns a mix of statuses, each with its share per mille.
func newCacheMix(shares map[cdnapi.CacheStatus]int) *cacheMix {
	m := &cacheMix{}
	var w []int
	// Walk cdnapi.CacheStatuses, not the map, so the table and therefore
	// every draw are the same in every run.
	for _, s := range cdnapi.CacheStatuses {
		if n := shares[s]; n > 0 {
			m.statuses = append(m.statuses, s)
			w = append(w, n)
		}
	}
	m.picker = newPicker(w...)
	return m
}

func (m *cacheMix) pick(r *rand.Rand) cdnapi.CacheStatus {
	return m.statuses[m.picker.pick(r)]
}

var (
	// cacheable is how a well-tuned CDN answers static content: mostly
	// from cache, with the occasional first request, expiry and refresh.
	cacheable = newCacheMix(map[cdnapi.CacheStatus]int{
		cdnapi.CacheHit:         84,
		cdnapi.CacheMiss:        7,
		cdnapi.CacheRevalidated: 4,
		cdnapi.CacheExpired:     2,
		cdnapi.CacheStale:       2,
		cdnapi.CacheUpdating:    1,
	})
	// shortLived is content with a short TTL, such as live playlists: it
	// is revalidated and refreshed far more often.
	shortLived = newCacheMix(map[cdnapi.CacheStatus]int{
		cdnapi.CacheHit:         55,
		cdnapi.CacheMiss:        5,
		cdnapi.CacheRevalidated: 20,
		cdnapi.CacheExpired:     10,
		cdnapi.CacheStale:       5,
		cdnapi.CacheUpdating:    5,
	})
	// uncacheable is API traffic: generated per request, or passed
	// straight to the origin.
	uncacheable = newCacheMix(map[cdnapi.CacheStatus]int{
		cdnapi.CacheDynamic: 7,
		cdnapi.CacheBypass:  3,
	})
)

// assetKinds are the kinds of requests, with their share per mille.
var assetKinds = []assetKind{
	{300, productImage, cacheable},
	{170, scriptBundle, cacheable},
	{80, stylesheet, cacheable},
	{60, avatar, cacheable},
	{50, font, cacheable},
	{200, videoSegment, cacheable},
	{30, videoPlaylist, shortLived},
	{50, apiCall, uncacheable},
	{40, siteFile, cacheable},
	{20, download, cacheable},
}

var assetKindPicker = pickerOf(assetKinds, func(k assetKind) int { return k.weight })

// imageFormats and imageWidths are the responsive variants of product
// images.
var (
	imageFormats = []string{".webp", ".webp", ".avif", ".jpg"}
	imageWidths  = []int{320, 640, 800, 1200, 1600}
)

// productImage is a responsive product image:
// "/images/products/12345-800w.webp". Product IDs follow a Zipf law, since a
// few products are viewed far more than the rest.
func productImage(g *Generator) (string, float64, float64) {
	r := g.assets
	width := imageWidths[r.IntN(len(imageWidths))]
	b := append(g.buf[:0], "/images/products/"...)
	b = appendPadded(b, int(g.product.Uint64()), 5)
	b = append(b, '-')
	b = appendPadded(b, width, 1)
	b = append(b, 'w')
	b = append(b, imageFormats[r.IntN(len(imageFormats))]...)
	g.buf = b
	return string(b), float64(width) * 70, 0.4
}

// bundles are a site's JavaScript bundles and their typical sizes.
var bundles = []namedFile{
	{"app", 180 * kB, 0.3},
	{"vendor", 420 * kB, 0.2},
	{"runtime", 4 * kB, 0.2},
	{"main", 90 * kB, 0.3},
	{"chunk-checkout", 60 * kB, 0.3},
	{"chunk-search", 45 * kB, 0.3},
	{"polyfills", 35 * kB, 0.2},
}

// scriptBundle is a content-hashed bundle: "/static/js/app.3f9a1c2b.js".
// Each bundle has only a few live builds, so paths repeat as they do on a
// real CDN.
func scriptBundle(g *Generator) (string, float64, float64) {
	r := g.assets
	i := r.IntN(len(bundles))
	f := bundles[i]
	b := append(g.buf[:0], "/static/js/"...)
	b = append(b, f.name...)
	b = append(b, '.')
	b = appendHex(b, g.buildHash(i, r), 8)
	b = append(b, ".js"...)
	g.buf = b
	return string(b), f.median, f.sigma
}

// stylesheet is a content-hashed stylesheet: "/static/css/main.9b1d0e4a.css".
func stylesheet(g *Generator) (string, float64, float64) {
	r := g.assets
	i := r.IntN(3)
	b := append(g.buf[:0], "/static/css/"...)
	b = append(b, [...]string{"main", "app", "print"}[i]...)
	b = append(b, '.')
	b = appendHex(b, g.buildHash(100+i, r), 8)
	b = append(b, ".css"...)
	g.buf = b
	return string(b), 30 * kB, 0.5
}

// buildHash returns the content hash of one of the three live builds of
// the file numbered i.
func (g *Generator) buildHash(i int, r *rand.Rand) uint64 {
	return mix64(g.assetKey ^ uint64(i*3+r.IntN(3)))
}

// avatar is a user's picture: "/images/avatars/482913.png".
func avatar(g *Generator) (string, float64, float64) {
	b := append(g.buf[:0], "/images/avatars/"...)
	b = appendPadded(b, 100000+g.assets.IntN(900000), 6)
	b = append(b, ".png"...)
	g.buf = b
	return string(b), 12 * kB, 0.5
}

// fonts are web fonts, served as they are named.
var fonts = []namedFile{
	{"/fonts/inter-var.woff2", 310 * kB, 0.05},
	{"/fonts/inter-var-latin.woff2", 110 * kB, 0.05},
	{"/fonts/roboto-regular.woff2", 65 * kB, 0.05},
	{"/fonts/roboto-bold.woff2", 66 * kB, 0.05},
	{"/fonts/jetbrains-mono.woff2", 92 * kB, 0.05},
	{"/fonts/noto-sans-jp.woff2", 1.2 * mB, 0.1},
}

// font picks a web font: "/fonts/inter-var.woff2".
func font(g *Generator) (string, float64, float64) {
	f := fonts[g.assets.IntN(len(fonts))]
	return f.name, f.median, f.sigma
}

// videos is the number of distinct videos in the catalogue; segments is
// the number of segments of each.
const (
	videos   = 64
	segments = 720
)

// appendVideoDir appends the HLS directory of a random video:
// "/video/hls/k3x9q2/".
func (g *Generator) appendVideoDir(b []byte) []byte {
	b = append(b, "/video/hls/"...)
	x := mix64(g.assetKey + uint64(g.assets.IntN(videos)))
	for range 6 {
		b = append(b, base62[26+10+x%26]) // lower-case letters only
		x /= 26
	}
	return append(b, '/')
}

// videoSegment is a segment of an HLS stream:
// "/video/hls/k3x9q2/segment_00042.ts".
func videoSegment(g *Generator) (string, float64, float64) {
	b := g.appendVideoDir(g.buf[:0])
	b = append(b, "segment_"...)
	b = appendPadded(b, g.assets.IntN(segments), 5)
	b = append(b, ".ts"...)
	g.buf = b
	return string(b), 1.6 * mB, 0.25
}

// videoPlaylist is the playlist of an HLS stream:
// "/video/hls/k3x9q2/playlist.m3u8".
func videoPlaylist(g *Generator) (string, float64, float64) {
	b := g.appendVideoDir(g.buf[:0])
	b = append(b, "playlist.m3u8"...)
	g.buf = b
	return string(b), 900, 0.3
}

// apiPaths are API endpoints behind the CDN; they are not cached.
var apiPaths = []namedFile{
	{"/api/v1/config.json", 2 * kB, 0.2},
	{"/api/v1/session", 400, 0.3},
	{"/api/v1/cart", 1.5 * kB, 0.6},
	{"/api/v1/search", 12 * kB, 0.8},
	{"/api/v1/recommendations", 6 * kB, 0.5},
}

// apiCall picks an API request, sometimes of one product:
// "/api/v1/products/12345".
func apiCall(g *Generator) (string, float64, float64) {
	r := g.assets
	if r.IntN(3) == 0 {
		b := append(g.buf[:0], "/api/v1/products/"...)
		b = appendPadded(b, int(g.product.Uint64()), 5)
		g.buf = b
		return string(b), 3 * kB, 0.4
	}
	f := apiPaths[r.IntN(len(apiPaths))]
	return f.name, f.median, f.sigma
}

// siteFiles are the small files every site serves from its root.
var siteFiles = []namedFile{
	{"/favicon.ico", 15 * kB, 0.01},
	{"/robots.txt", 300, 0.01},
	{"/sitemap.xml", 40 * kB, 0.1},
	{"/manifest.webmanifest", 700, 0.01},
	{"/apple-touch-icon.png", 9 * kB, 0.01},
	{"/index.html", 25 * kB, 0.1},
}

// siteFile picks a file from the site root: "/robots.txt".
func siteFile(g *Generator) (string, float64, float64) {
	f := siteFiles[g.assets.IntN(len(siteFiles))]
	return f.name, f.median, f.sigma
}

// download is an installer: "/downloads/app-setup-2.4.1.exe".
func download(g *Generator) (string, float64, float64) {
	r := g.assets
	b := append(g.buf[:0], "/downloads/app-setup-2."...)
	b = appendPadded(b, r.IntN(6), 1)
	b = append(b, '.')
	b = appendPadded(b, r.IntN(4), 1)
	b = append(b, [...]string{".exe", ".dmg", ".AppImage"}[r.IntN(3)]...)
	g.buf = b
	return string(b), 95 * mB, 0.2
}
