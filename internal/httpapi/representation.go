package httpapi

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/binary"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/cespare/xxhash/v2"
)

// This file is the representation writer, through which every successful
// answer goes: the whole body is built in memory first (every body of this
// API is small), and only then are the ETag, a 304, the content coding and
// HEAD decided. The pools of the buffers and gzip writers it uses are here
// too; the content codings themselves are in coding.go.

// gzipMinSize is the size above which a body is compressed. Below about
// 1 KiB the coding's header and the CPU cost outweigh the bytes saved.
const gzipMinSize = 1024

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
	// each content coding in coded, made by the first answer that needs it:
	// a hot page is compressed once per coding, not once per answer.
	tag   string
	keep  bool // set by precompute
	coded [numCodings]codedBody
	// hv holds the header values of a kept representation, made once by
	// precompute (the coded lengths with coded), so that serving it again
	// sets headers without allocating.
	hv *headerValues
}

// codedBody is a kept content coding of a body.
type codedBody struct {
	once  sync.Once
	bytes []byte
}

// headerValues are the values of the headers an answer of a representation
// sets, each a slice of length and capacity 1 that answers may share (see
// nosniffValue).
type headerValues struct {
	cacheControl, csp, link, contentType []string // nil when the representation has none
	etag, length                         []string
	// The ETag and Content-Length of each content coding, by coding.
	codedETag, codedLength [numCodings][]string
}

// headerValues returns the header values of rep's answers, whose ETag's
// opaque part is tag. codedLength is left for the caller.
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
		length:       []string{strconv.Itoa(len(rep.body))},
	}
	for c := codingGzip; c < numCodings; c++ {
		hv.codedETag[c] = []string{`"` + tag + c.tagSuffix() + `"`}
	}
	if rep.contentType != contentTypeJSON[0] {
		hv.contentType = one(rep.contentType)
	}
	return hv
}

// bodyTag returns the opaque part of the strong ETag of body: its 64-bit
// xxHash (XXH64, seed 0), the same on every replica, so caches can
// revalidate against any of them.
//
// A strong validator promises byte-for-byte equality of the bodies that
// share it (RFC 9110, 8.8.1); it need not resist an adversary, since a
// client can only ever be told "not modified" about its own stored copy of
// the same URL, whose versions are what the tag tells apart. Two versions
// of one page collide with probability 2^-64, so the tag stays strong in
// practice. Every page-cache miss pays for the tag, and the SHA-256 it
// replaced cost 7.6 times as much (BenchmarkBodyTag, a page of 20 files:
// 6.7 µs against 0.87 µs, with both cores busy).
func bodyTag(body []byte) string {
	var sum [8]byte
	binary.BigEndian.PutUint64(sum[:], xxhash.Sum64(body))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// precompute fills in the tag of a body that never changes and will be
// served again, and has its codings kept once made. No coding is made here:
// a page that no client asks for compressed (a deep page read once, by a
// client without Accept-Encoding) would pay for it for nothing.
func (rep *representation) precompute() {
	rep.tag = bodyTag(rep.body)
	rep.keep = true
	rep.hv = rep.headerValues(rep.tag)
}

// codedBody returns the coding c of rep.body: made once and kept when rep
// is served again (see precompute), else made for this answer in a pooled
// buffer, which release returns.
func (rep *representation) codedBody(c coding) (coded []byte, release func()) {
	if rep.keep {
		kept := &rep.coded[c]
		kept.once.Do(func() {
			buf := new(bytes.Buffer)
			c.encode(buf, rep.body)
			kept.bytes = buf.Bytes()
			rep.hv.codedLength[c] = []string{strconv.Itoa(len(kept.bytes))}
		})
		return kept.bytes, func() {}
	}
	buf := bufferPool.Get().(*bytes.Buffer)
	buf.Reset()
	c.encode(buf, rep.body)
	return buf.Bytes(), func() {
		if buf.Cap() <= maxPooledSlice {
			bufferPool.Put(buf)
		}
	}
}

// serve answers r with rep: 304 when If-None-Match matches, else 200 with
// the body, in the content coding the client prefers (zstd or gzip) when the
// body is big enough. HEAD gets the same headers, Content-Length included,
// and no body.
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
	c := identity
	if len(rep.body) > gzipMinSize {
		c = chooseCoding(r.Header.Values("Accept-Encoding"))
	}
	if c == identity {
		h["Etag"] = hv.etag
	} else {
		h["Etag"] = hv.codedETag[c]
	}

	// A 304 needs the tag of the answer this request would get: each coding
	// of the body is its own representation, with its own tag, and a 304
	// tells the client to use the stored answer whose tag it names. A
	// client that sends the gzip tag and now asks for zstd (or for no
	// coding) gets the whole answer, never a 304 that points at a coding it
	// no longer accepts.
	if inm := r.Header.Values("If-None-Match"); len(inm) > 0 && noneMatch(inm, tag, c) {
		w.WriteHeader(http.StatusNotModified)
		return
	}

	if hv.link != nil {
		h["Link"] = hv.link
	}
	body, length := rep.body, hv.length
	if c != identity {
		coded, release := rep.codedBody(c)
		defer release()
		body, length = coded, hv.codedLength[c]
		if !rep.keep {
			length = []string{strconv.Itoa(len(coded))}
		}
		h["Content-Encoding"] = c.headerValue()
	}
	h["Content-Type"] = hv.contentType
	h["Content-Length"] = length
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

// noneMatch reports whether If-None-Match field values hold "*" or the tag
// of the coding c of the body whose tag is tag. Tags are compared weakly, as
// RFC 9110 requires for If-None-Match: W/ is ignored. Malformed members are
// skipped rather than failing the request.
func noneMatch(values []string, tag string, c coding) bool {
	suffix := c.tagSuffix()
	for _, v := range values {
		for {
			v = strings.TrimLeft(v, " \t,")
			if v == "" {
				break
			}
			if v[0] == '*' {
				return true
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
			if opaque := v[1 : 1+end]; len(opaque) == len(tag)+len(suffix) &&
				opaque[:len(tag)] == tag && opaque[len(tag):] == suffix {
				return true
			}
			v = v[2+end:]
		}
	}
	return false
}

// Pools of the buffers and gzip writers that every answer would otherwise
// allocate anew (zstd's one encoder is in coding.go).
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
