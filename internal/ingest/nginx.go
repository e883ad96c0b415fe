package ingest

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/cdnapi/cdnapi"
)

// An nginx edge logs each request as one JSON object, in the log_format of
// deploy/nginx/cdnapi-log.conf, named after the nginx variables that fill
// it. EdgeParser reads those lines as nginx writes them: the same exact
// scanner as the NDJSON of the API, so a field given twice or a field
// nginx does not write is an error, not a guess.

// The fields of an edge's log line, in the order of the log_format.
const (
	edgeRequestID = iota
	edgeMsec
	edgeRegion
	edgeMethod
	edgeURI
	edgeStatus
	edgeBodyBytes
	edgeCacheStatus
)

const (
	wantRequestID = `nginx's $request_id: 32 hex characters`
	wantMsec      = `nginx's $msec: seconds since 1970 as a JSON number, such as 1732540000.123`
	wantMethod    = `an HTTP method, such as GET`
	wantHTTPCode  = `an HTTP status code from 100 to 599`
	wantUpstream  = `empty or one of HIT, MISS, EXPIRED, STALE, UPDATING, REVALIDATED or BYPASS`
)

var edgeSchema = schema{
	noun: "nginx edge log line",
	fields: []string{"request_id", "msec", "region", "request_method", "uri", "status",
		"body_bytes_sent", "upstream_cache_status"},
	want: []string{wantRequestID, wantMsec, wantRegionCode, wantMethod, wantPath, wantHTTPCode,
		wantBytes, wantUpstream},
	extra:   true,
	notJSON: otherLogFormat,
}

// ErrCombinedFormat is the error of a line in nginx's default combined
// format (or common, or any text access log): it carries no cache status,
// so no asset can be made of it. It says, in one line, what to log instead
// and where the README shows it.
var ErrCombinedFormat = &FieldError{
	Problem: "nginx's combined log format, which has no cache status",
	Want:    "the JSON log_format cdnapi of deploy/nginx/cdnapi-log.conf (docs/data.md, \"Following edges\")",
}

// otherLogFormat returns ErrCombinedFormat for a line that looks like
// nginx's combined or common format: `addr - user [time] "request" …`.
func otherLogFormat(line []byte) error {
	if combinedLine.Match(line) {
		return ErrCombinedFormat
	}
	return nil
}

// combinedLine matches the start of a line of nginx's combined and common
// formats: $remote_addr - $remote_user [$time_local] "$request" $status.
var combinedLine = regexp.MustCompile(`^\S+ \S+ \S+ \[[^\]]+\] "[^"]*" \d{3} `)

// EdgeRequest is one request of an edge's log.
type EdgeRequest struct {
	// At is when nginx logged the request, to the millisecond ($msec). The
	// asset's created_at is At in whole seconds, as the API shows time.
	At time.Time
	// Listed reports whether the request is one the assets list shows;
	// Asset is set only then. See EdgeParser.Parse for which are.
	Listed bool
	Asset  cdnapi.Asset
	// RefusedByNginx reports a request nginx refused before the edge's
	// server block ran (400 for a request line it cannot read, 414 for a
	// URI too long): its line has no region, and is valid but not
	// listed. Scanners make many.
	RefusedByNginx bool
	// Region is the line's region code, listed or not.
	Region string
}

// EdgeParser turns the lines of edges' access logs into assets. It is not
// safe for concurrent use: it keeps scratch space between lines.
type EdgeParser struct {
	v    *Validator
	vals []rawValue
}

// NewEdgeParser returns a parser whose assets may name the given regions,
// and no others.
func NewEdgeParser(regions []cdnapi.Region) *EdgeParser {
	return &EdgeParser{v: NewValidator(regions), vals: make([]rawValue, len(edgeSchema.fields))}
}

// Parse reads one line, without its newline. A line that is not a request
// in the edge format, or whose request does not make a valid asset, is a
// *FieldError. A valid request is listed when it is a GET or a HEAD
// answered with 2xx or 304: a request the edge served from its cache or
// its origin. Other requests (errors, redirects, other methods) are valid
// but not listed: they tell nothing about what the edge holds.
//
// The asset's ID is "ast_" and the request ID, so reading the same line
// twice writes the same row once. Its cache status is nginx's
// $upstream_cache_status; a request that did not go through the cache at
// all leaves that empty, and is listed as DYNAMIC, as CDNs call what they
// pass through uncached.
func (p *EdgeParser) Parse(line []byte) (EdgeRequest, error) {
	var r EdgeRequest
	if err := edgeSchema.decodeLine(line, p.vals); err != nil {
		return r, err
	}
	vals := p.vals
	id, ok := vals[edgeRequestID].str()
	if !ok || !requestID(id) {
		return r, &FieldError{Field: "request_id", Want: wantRequestID}
	}
	if r.At, ok = msecValue(vals[edgeMsec]); !ok {
		return r, &FieldError{Field: "msec", Want: wantMsec}
	}
	region, ok := vals[edgeRegion].str()
	if !ok {
		return r, &FieldError{Field: "region", Want: wantRegionCode}
	}
	if region == "" {
		// nginx answers a request it cannot read with a 4xx before the
		// server block's `set $cdnapi_region` runs; its method and uri
		// may be empty too. Anything else without a region is invalid.
		if status, ok := vals[edgeStatus].int64(); ok && status >= 400 && status < 500 {
			r.RefusedByNginx = true
			return r, nil
		}
	}
	method, ok := vals[edgeMethod].intern(httpMethods)
	if !ok {
		if method, ok = vals[edgeMethod].str(); !ok || !validText(method) {
			return r, &FieldError{Field: "request_method", Want: wantMethod}
		}
	}
	uri, ok := vals[edgeURI].str()
	if !ok {
		return r, &FieldError{Field: "uri", Want: wantPath}
	}
	status, ok := vals[edgeStatus].int64()
	if !ok || status < 100 || status > 599 {
		return r, &FieldError{Field: "status", Want: wantHTTPCode}
	}
	bytes, ok := vals[edgeBodyBytes].int64()
	if !ok {
		return r, &FieldError{Field: "body_bytes_sent", Want: wantBytes}
	}
	cache, ok := vals[edgeCacheStatus].intern(upstreamStatuses)
	if !ok {
		return r, &FieldError{Field: "upstream_cache_status", Want: wantUpstream}
	}
	if cache == "" {
		cache = string(cdnapi.CacheDynamic)
	}
	r.Asset = cdnapi.Asset{
		ID:          cdnapi.AssetIDPrefix + id,
		CreatedAt:   r.At.Truncate(time.Second),
		Path:        uri,
		Bytes:       bytes,
		CacheStatus: cdnapi.CacheStatus(cache),
		Region:      region,
	}
	// The whole line is checked, listed or not, so that a log whose
	// region is unknown is found out on its first line, not its first GET.
	if err := p.v.Asset(&r.Asset); err != nil {
		fe := err.(*FieldError)
		switch fe.Field {
		case "path":
			fe.Field = "uri"
		case "bytes":
			fe.Field = "body_bytes_sent"
		}
		return EdgeRequest{}, fe
	}
	r.Region = region
	r.Listed = (method == "GET" || method == "HEAD") && (status/100 == 2 || status == 304)
	if !r.Listed {
		r.Asset = cdnapi.Asset{}
	}
	return r, nil
}

// UnknownRegion reports whether err is Parse's error for a line that names
// a region of the right shape that the parser was not given: the regions
// may have changed since the parser was made.
func UnknownRegion(err error) bool {
	fe, ok := err.(*FieldError)
	return ok && fe.Field == "region" && fe.Problem != ""
}

// httpMethods are the methods an edge logs most, interned so that their
// strings are not allocated on every line.
var httpMethods = []string{"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"}

// upstreamStatuses are the values nginx gives $upstream_cache_status, and
// the empty string it logs when the request did not go through the cache.
// They are cache statuses of the API under the same names.
var upstreamStatuses = []string{"HIT", "MISS", "EXPIRED", "STALE", "UPDATING", "REVALIDATED", "BYPASS", ""}

// requestID reports whether s has the shape of nginx's $request_id: 32
// lower-case hex characters.
func requestID(s string) bool {
	if len(s) != 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// msecValue reads $msec, a JSON number such as 1732540000.123, as an exact
// time to the millisecond: it is read as decimal digits, never through a
// float, which would round some of them. Any JSON number is taken, as
// shippers that re-encode JSON write it (1732540000.1, 1732540000,
// 1.7325400001e9); digits past the millisecond are dropped. A negative
// number is not a time of nginx.
func msecValue(v rawValue) (time.Time, bool) {
	if v.kind != kindNumber {
		return time.Time{}, false
	}
	ms, ok := decimalMillis(v.raw)
	if !ok {
		return time.Time{}, false
	}
	t := time.UnixMilli(ms).UTC()
	if !validTime(t.Truncate(time.Second)) {
		return time.Time{}, false
	}
	return t, true
}

// decimalMillis returns the JSON number raw times 1,000, truncated to an
// integer, when it is not negative and fits: the digits are gathered with
// the decimal exponent they stand at, then shifted to milliseconds.
func decimalMillis(raw []byte) (int64, bool) {
	var digits []byte
	exp, i := 0, 0
	if len(raw) == 0 || raw[0] == '-' {
		return 0, false
	}
	for ; i < len(raw) && '0' <= raw[i] && raw[i] <= '9'; i++ {
		digits = append(digits, raw[i])
	}
	if i < len(raw) && raw[i] == '.' {
		for i++; i < len(raw) && '0' <= raw[i] && raw[i] <= '9'; i++ {
			digits = append(digits, raw[i])
			exp--
		}
	}
	if i < len(raw) && (raw[i] == 'e' || raw[i] == 'E') {
		e, err := strconv.Atoi(strings.TrimPrefix(string(raw[i+1:]), "+"))
		if err != nil || e < -40 || e > 40 {
			return 0, false
		}
		exp += e
		i = len(raw)
	}
	if i != len(raw) {
		return 0, false
	}
	exp += 3 // seconds to milliseconds
	for exp < 0 && len(digits) > 0 {
		digits, exp = digits[:len(digits)-1], exp+1
	}
	digits = bytes.TrimLeft(digits, "0")
	if exp < 0 || len(digits) == 0 {
		return 0, true
	}
	if len(digits)+exp > 18 {
		return 0, false
	}
	var n int64
	for _, d := range digits {
		n = n*10 + int64(d-'0')
	}
	for ; exp > 0; exp-- {
		n *= 10
	}
	return n, true
}
