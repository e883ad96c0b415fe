package httpapi

import (
	"bytes"
	"compress/gzip"
	"strconv"
	"strings"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// coding is a content coding of an answer's body.
//
// zstd is offered beside gzip because, on this API's JSON pages, it makes
// smaller bodies for less CPU (internal/httpapi BenchmarkCodings: a page of
// 100 files). br is not offered: the Go encoders of Brotli are slower than
// gzip at the levels that beat it on size, it would be one more dependency,
// and every client that accepts br but not zstd accepts gzip.
type coding uint8

const (
	identity coding = iota
	codingGzip
	codingZstd
	numCodings
)

// tagSuffix marks the ETag of an answer in coding c. A strong ETag names one
// exact sequence of bytes, so each coding of a body has its own tag.
func (c coding) tagSuffix() string {
	switch c {
	case codingGzip:
		return "-gzip"
	case codingZstd:
		return "-zstd"
	}
	return ""
}

// headerValue is the Content-Encoding of an answer in coding c.
func (c coding) headerValue() []string {
	switch c {
	case codingGzip:
		return contentEncodingGzip
	case codingZstd:
		return contentEncodingZstd
	}
	return nil
}

var contentEncodingZstd = []string{"zstd"}

// encode appends the coding c of body to buf.
func (c coding) encode(buf *bytes.Buffer, body []byte) {
	switch c {
	case codingGzip:
		compress(buf, body)
	case codingZstd:
		// EncodeAll appends to the free room of buf, so a pooled buffer
		// with room enough takes the coding without allocating.
		buf.Write(zstdEncoder().EncodeAll(body, buf.AvailableBuffer()))
	default:
		buf.Write(body)
	}
}

// zstdEncoder is the one zstd encoder of the process: EncodeAll may be called
// concurrently, each call on one of its GOMAXPROCS block encoders. On a page
// of 100 files the fastest level makes a smaller body than gzip's level 5,
// and than zstd's default level, whose longer searches find nothing more in
// IDs and checksums, at a fraction of the CPU (BenchmarkCodings); the
// smaller memory mode keeps its state to what bodies of tens of KiB need.
var zstdEncoder = sync.OnceValue(func() *zstd.Encoder {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithLowerEncoderMem(true))
	if err != nil {
		panic(err) // the options are constant: a programming error
	}
	return enc
})

// chooseCoding returns the coding of an answer to a request with these
// Accept-Encoding field values: the accepted coding of highest weight,
// zstd on a tie, since it is the smaller and the cheaper to decode. zstd
// must be named: "*" (with a non-zero weight) stands for gzip, which every
// HTTP client decodes, and not for a coding the client may not know. No
// acceptable coding means identity.
func chooseCoding(values []string) coding {
	gzipQ, zstdQ, starQ := -1.0, 0.0, -1.0
	for _, v := range values {
		for member := range strings.SplitSeq(v, ",") {
			name, params, _ := strings.Cut(member, ";")
			switch strings.ToLower(strings.TrimSpace(name)) {
			case "gzip", "x-gzip":
				gzipQ = quality(params)
			case "zstd":
				zstdQ = quality(params)
			case "*":
				starQ = quality(params)
			}
		}
	}
	if gzipQ < 0 { // not named: as "*" says, or not accepted
		gzipQ = max(starQ, 0)
	}
	switch {
	case zstdQ > 0 && zstdQ >= gzipQ:
		return codingZstd
	case gzipQ > 0:
		return codingGzip
	}
	return identity
}

// quality returns the weight of an Accept-Encoding member from its
// parameters. A missing q means 1; a malformed one is read leniently as 1.
func quality(params string) float64 {
	for p := range strings.SplitSeq(params, ";") {
		name, value, _ := strings.Cut(strings.TrimSpace(p), "=")
		if !strings.EqualFold(strings.TrimSpace(name), "q") {
			continue
		}
		q, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil || q < 0 || q > 1 {
			return 1
		}
		return q
	}
	return 1
}

// compress appends the gzip coding of body to buf.
func compress(buf *bytes.Buffer, body []byte) {
	zw := gzipPool.Get().(*gzip.Writer)
	zw.Reset(buf)
	zw.Write(body) // writes to a bytes.Buffer cannot fail
	zw.Close()
	zw.Reset(nil) // do not keep buf reachable from the pool
	gzipPool.Put(zw)
}
