package httpapi

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// This file is the representation writer, through which every successful
// answer goes: the whole body is built in memory first (every body of this
// API is small), and only then are the ETag, a 304, the content coding and
// HEAD decided. The pools of the buffers and gzip writers it uses are here too.

// gzipMinSize is the size above which a body is compressed. Below about
// 1 KiB gzip's header and the CPU cost outweigh the bytes saved.
const gzipMinSize = 1024

// gzipSuffix marks the ETag of a gzip-coded answer. A strong ETag names one
// exact sequence of bytes, so the two codings of a body need two tags.
const gzipSuffix = "-gzip"

// representation is a body with the metadata its 200 and 304 share.
type representation struct {
	contentType  string
	cacheControl string
	vary         string // beyond Accept-Encoding, e.g. "Authorization"; may be ""
	csp          string // replaces the JSON CSP, e.g. for HTML; may be ""
	link         string // the Link header of a 200, e.g. the next page; may be ""
	body         []byte
	// tag is the opaque part of the strong ETag, without quotes, computed
	// by serve when empty. Bodies served more than once (static ones, pages
	// in the page cache) fill it in once with precompute, and then keep
	// their gzip coding in gzipped, made by the first answer that needs it.
	tag      string
	keep     bool // set by precompute
	gzipOnce sync.Once
	gzipped  []byte
	// hv holds the header values of a kept representation, made once by
	// precompute (gzipLength with gzipped), so that serving it again sets
	// headers without allocating.
	hv *headerValues
}

// headerValues are the values of the headers an answer of a representation
// sets, each a slice of length and capacity 1 that answers may share (see
// nosniffValue).
type headerValues struct {
	cacheControl, csp, link, contentType []string // nil when the representation has none
	etag, etagGzip, length, gzipLength   []string
}

// headerValues returns the header values of rep's answers, whose ETag's
// opaque part is tag. gzipLength is left for the caller.
func (rep *representation) headerValues(tag string) *headerValues {
	one := func(v string) []string {
		if v == "" {
			return nil
		}
		return []string{v}
	}
	hv := &headerValues{
		cacheControl: one(rep.cacheControl),
		csp:          one(rep.csp),
		link:         one(rep.link),
		contentType:  contentTypeJSON,
		etag:         []string{`"` + tag + `"`},
		etagGzip:     []string{`"` + tag + gzipSuffix + `"`},
		length:       []string{strconv.Itoa(len(rep.body))},
	}
	if rep.contentType != contentTypeJSON[0] {
		hv.contentType = one(rep.contentType)
	}
	return hv
}

// bodyTag returns the opaque part of the strong ETag of body: 128 bits of
// its SHA-256, which is fast (hardware-assisted) and the same on every
// replica, so caches can revalidate against any of them.
func bodyTag(body []byte) string {
	sum := sha256.Sum256(body)
	return base64.RawURLEncoding.EncodeToString(sum[:16])
}

// precompute fills in the tag of a body that never changes and will be
// served again, and has its gzip coding kept once made. The coding is not
// made here: a page that no client asks for compressed (a deep page read
// once, by a client without Accept-Encoding) would pay for it for nothing.
func (rep *representation) precompute() {
	rep.tag = bodyTag(rep.body)
	rep.keep = true
	rep.hv = rep.headerValues(rep.tag)
}

// gzipBody returns the gzip coding of rep.body: made once and kept when rep
// is served again (see precompute), else made for this answer in a pooled
// buffer, which release returns.
func (rep *representation) gzipBody() (coded []byte, release func()) {
	if rep.keep {
		rep.gzipOnce.Do(func() {
			buf := new(bytes.Buffer)
			compress(buf, rep.body)
			rep.gzipped = buf.Bytes()
			rep.hv.gzipLength = []string{strconv.Itoa(len(rep.gzipped))}
		})
		return rep.gzipped, func() {}
	}
	buf := bufferPool.Get().(*bytes.Buffer)
	buf.Reset()
	compress(buf, rep.body)
	return buf.Bytes(), func() {
		if buf.Cap() <= maxPooledSlice {
			bufferPool.Put(buf)
		}
	}
}

// serve answers r with rep: 304 when If-None-Match matches, else 200 with
// the body, gzip-coded when the client accepts it and the body is big enough.
// HEAD gets the same headers, Content-Length included, and no body.
func (rep *representation) serve(w http.ResponseWriter, r *http.Request) {
	hv, tag := rep.hv, rep.tag
	if hv == nil {
		tag = bodyTag(rep.body)
		hv = rep.headerValues(tag)
	}
	h := w.Header()
	if rep.vary == "" && len(h["Vary"]) == 0 {
		h["Vary"] = varyAcceptEncoding
	} else {
		h.Add("Vary", "Accept-Encoding")
		if rep.vary != "" {
			h.Add("Vary", rep.vary)
		}
	}
	h["Cache-Control"] = hv.cacheControl
	if hv.csp != nil {
		h["Content-Security-Policy"] = hv.csp
	}
	useGzip := len(rep.body) > gzipMinSize && acceptsGzip(r.Header.Values("Accept-Encoding"))
	if useGzip {
		h["Etag"] = hv.etagGzip
	} else {
		h["Etag"] = hv.etag
	}

	if inm := r.Header.Values("If-None-Match"); len(inm) > 0 {
		star, plain, coded := noneMatch(inm, tag)
		if star || plain || coded {
			// The client's copy is current. When it names only the other
			// coding of the body, the 304 carries that coding's tag: a
			// cache that sent several tags learns from the 304's ETag
			// which stored answer to reuse, and that one is the match.
			switch {
			case useGzip && !coded && !star:
				h["Etag"] = hv.etag
			case !useGzip && !plain && !star:
				h["Etag"] = hv.etagGzip
			}
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}

	if hv.link != nil {
		h["Link"] = hv.link
	}
	body, length := rep.body, hv.length
	if useGzip {
		coded, release := rep.gzipBody()
		defer release()
		body, length = coded, hv.gzipLength
		if !rep.keep {
			length = []string{strconv.Itoa(len(coded))}
		}
		h["Content-Encoding"] = contentEncodingGzip
	}
	h["Content-Type"] = hv.contentType
	h["Content-Length"] = length
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

// noneMatch reads If-None-Match field values against the body whose tag is
// tag. It reports whether they hold "*", the tag of the identity coding, and
// the tag of the gzip coding. Tags are compared weakly, as RFC 9110 requires
// for If-None-Match: W/ is ignored. Malformed members are skipped rather
// than failing the request.
func noneMatch(values []string, tag string) (star, plain, coded bool) {
	for _, v := range values {
		for {
			v = strings.TrimLeft(v, " \t,")
			if v == "" {
				break
			}
			if v[0] == '*' {
				star = true
				v = v[1:]
				continue
			}
			v = strings.TrimPrefix(v, "W/")
			if v == "" || v[0] != '"' {
				// Not an entity-tag: skip to the next comma.
				i := strings.IndexByte(v, ',')
				if i < 0 {
					break
				}
				v = v[i:]
				continue
			}
			end := strings.IndexByte(v[1:], '"')
			if end < 0 {
				break
			}
			switch opaque := v[1 : 1+end]; {
			case opaque == tag:
				plain = true
			case len(opaque) == len(tag)+len(gzipSuffix) &&
				opaque[:len(tag)] == tag && opaque[len(tag):] == gzipSuffix:
				coded = true
			}
			v = v[2+end:]
		}
	}
	return star, plain, coded
}

// acceptsGzip reports whether Accept-Encoding field values allow gzip: gzip
// (or its alias x-gzip) with a non-zero q, or, when gzip is not named, "*"
// with a non-zero q.
func acceptsGzip(values []string) bool {
	star := false
	for _, v := range values {
		for member := range strings.SplitSeq(v, ",") {
			coding, params, _ := strings.Cut(member, ";")
			coding = strings.ToLower(strings.TrimSpace(coding))
			switch coding {
			case "gzip", "x-gzip":
				return qualityNonZero(params)
			case "*":
				star = qualityNonZero(params)
			}
		}
	}
	return star
}

// qualityNonZero reports whether the parameters of an Accept-Encoding member
// give it a weight above zero. A missing q means 1; a q of 0, 0., 0.0 and so
// on refuses the coding. A malformed q is read leniently as non-zero.
func qualityNonZero(params string) bool {
	for p := range strings.SplitSeq(params, ";") {
		name, value, _ := strings.Cut(strings.TrimSpace(p), "=")
		if !strings.EqualFold(strings.TrimSpace(name), "q") {
			continue
		}
		value = strings.TrimSpace(value)
		if value == "" || value[0] != '0' {
			return true
		}
		frac, dotted := strings.CutPrefix(value[1:], ".")
		return (dotted || frac != "") && strings.Trim(frac, "0") != ""
	}
	return true
}

// Pools of the buffers and gzip writers that every answer would otherwise
// allocate anew.
var (
	bufferPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}
	slicePool  = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}
	gzipPool   = sync.Pool{New: func() any {
		// Level 5 compresses JSON nearly as well as the default 6 at
		// noticeably less CPU per answer.
		zw, _ := gzip.NewWriterLevel(nil, 5)
		return zw
	}}
)

// compress appends the gzip coding of body to buf.
func compress(buf *bytes.Buffer, body []byte) {
	zw := gzipPool.Get().(*gzip.Writer)
	zw.Reset(buf)
	zw.Write(body) // writes to a bytes.Buffer cannot fail
	zw.Close()
	zw.Reset(nil) // do not keep buf reachable from the pool
	gzipPool.Put(zw)
}

// maxPooledSlice is the largest buffer put back into slicePool, so that one
// unusually large answer does not pin its memory for good.
const maxPooledSlice = 1 << 20

// getBuffer returns an empty byte slice from the pool, to build a body in.
func getBuffer() *[]byte {
	b := slicePool.Get().(*[]byte)
	*b = (*b)[:0]
	return b
}

// putBuffer returns b to the pool once nothing refers to its bytes.
func putBuffer(b *[]byte) {
	if cap(*b) <= maxPooledSlice {
		slicePool.Put(b)
	}
}
