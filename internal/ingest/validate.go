package ingest

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cdnapi/cdnapi"
)

// FieldError says which field of a record is invalid and what it should
// hold instead. Its text, "checksum: want "sha256:" and 64 lower-case hex
// characters", names the field and the expectation; an ingest error adds
// the line number in front.
type FieldError struct {
	Field   string // the field's JSON name; "" for a fault of the whole line
	Problem string // what is wrong, when "want" alone would not say it; may be ""
	Want    string // what the field (or line) must be
}

func (e *FieldError) Error() string {
	var b strings.Builder
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	if e.Problem != "" {
		b.WriteString(e.Problem)
		b.WriteString("; ")
	}
	b.WriteString("want ")
	b.WriteString(e.Want)
	return b.String()
}

// What each field must hold, in the words of the error messages. They are
// the shapes of API.md, stated as instructions to whoever produces the
// input.
const (
	wantFileID      = `"fil_" and 1 to 64 letters or digits`
	wantAssetID     = `"ast_" and 1 to 64 letters or digits`
	wantProject     = cdnapi.ProjectRule
	wantTime        = `an RFC 3339 UTC time in whole seconds with a Z, such as 2026-11-20T14:03:07Z, from 1970 to 9999`
	wantText        = `a non-empty string without control characters`
	wantBytes       = `an integer from 0 to 9223372036854775807`
	wantChecksum    = `"sha256:" and 64 lower-case hex characters`
	wantPath        = `a string that starts with "/" and has no control characters`
	wantCacheStatus = `one of HIT, MISS, EXPIRED, STALE, UPDATING, REVALIDATED, BYPASS or DYNAMIC`
	wantRegionCode  = `a region code of three upper-case letters and a digit, such as FRA1`
	wantZone        = `two lower-case words joined by a hyphen, such as eu-central`
	wantCountry     = `an upper-case ISO 3166-1 alpha-2 country code, such as DE`
	wantStatus      = `one of operational, degraded_performance, partial_outage, major_outage or under_maintenance`
)

// Validator checks records against the shapes of API.md before they are
// written. Both the NDJSON ingest and the demo generator check every record
// with it, so the two can never disagree about what is valid.
//
// A Validator is safe for concurrent use; it never changes after
// NewValidator.
type Validator struct {
	regions map[string]struct{} // the codes an asset may name
}

// NewValidator returns a Validator whose assets may name the given regions,
// and no others.
func NewValidator(regions []cdnapi.Region) *Validator {
	v := &Validator{regions: make(map[string]struct{}, len(regions))}
	for _, r := range regions {
		v.regions[r.Code] = struct{}{}
	}
	return v
}

// File returns a *FieldError for the first invalid field of f, in the order
// of the API output, or nil.
func (v *Validator) File(f *cdnapi.File) error {
	switch {
	case !cdnapi.ValidID(cdnapi.FileIDPrefix, f.ID):
		return &FieldError{Field: "id", Want: wantFileID}
	case !cdnapi.ValidProject(f.Project):
		return &FieldError{Field: "project", Want: wantProject}
	case !validTime(f.CreatedAt):
		return &FieldError{Field: "created_at", Want: wantTime}
	case !validText(f.Filename):
		return &FieldError{Field: "filename", Want: wantText}
	case f.Bytes < 0:
		return &FieldError{Field: "bytes", Want: wantBytes}
	case !validChecksum(f.Checksum):
		return &FieldError{Field: "checksum", Want: wantChecksum}
	}
	return nil
}

// Asset returns a *FieldError for the first invalid field of a, in the
// order of the API output, or nil. The region must be one the Validator
// was made with.
func (v *Validator) Asset(a *cdnapi.Asset) error {
	switch {
	case !cdnapi.ValidID(cdnapi.AssetIDPrefix, a.ID):
		return &FieldError{Field: "id", Want: wantAssetID}
	case !validTime(a.CreatedAt):
		return &FieldError{Field: "created_at", Want: wantTime}
	case !validPath(a.Path):
		return &FieldError{Field: "path", Want: wantPath}
	case a.Bytes < 0:
		return &FieldError{Field: "bytes", Want: wantBytes}
	case !a.CacheStatus.Valid():
		return &FieldError{Field: "cache_status", Want: wantCacheStatus}
	case !cdnapi.ValidRegionCode(a.Region):
		return &FieldError{Field: "region", Want: wantRegionCode}
	}
	if _, ok := v.regions[a.Region]; !ok {
		// The code has the right shape, so quoting it is safe and tells
		// the operator which region to add.
		return &FieldError{Field: "region", Problem: fmt.Sprintf("no region %s exists", a.Region),
			Want: "the code of a known region (ingest regions first)"}
	}
	return nil
}

// Region returns a *FieldError for the first invalid field of r, in the
// order of the API output, or nil.
func (v *Validator) Region(r *cdnapi.Region) error {
	switch {
	case !cdnapi.ValidRegionCode(r.Code):
		return &FieldError{Field: "code", Want: wantRegionCode}
	case !validText(r.Name):
		return &FieldError{Field: "name", Want: wantText}
	case !validZone(r.Zone):
		return &FieldError{Field: "zone", Want: wantZone}
	case !validCountry(r.Country):
		return &FieldError{Field: "country", Want: wantCountry}
	case !r.Status.Valid():
		return &FieldError{Field: "status", Want: wantStatus}
	}
	return nil
}

// The range of times a record may carry. Both ends are whole seconds in
// UTC, and the upper one keeps the year at four digits, as RFC 3339 needs.
var (
	minTime = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTime = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
)

// validTime reports whether t is a whole second in UTC within the range
// above: exactly what an API timestamp can show.
func validTime(t time.Time) bool {
	return t.Location() == time.UTC && t.Nanosecond() == 0 && !t.Before(minTime) && !t.After(maxTime)
}

// parseTime parses the one timestamp shape of API.md,
// "2026-11-20T14:03:07Z", and nothing else: no offsets, no fractions, no
// lower-case t or z. time.Parse would accept a fraction even when the
// layout has none, and it is slower than reading twenty fixed bytes.
func parseTime(s string) (time.Time, bool) {
	if len(s) != len(cdnapi.TimeLayout) || s[4] != '-' || s[7] != '-' || s[10] != 'T' ||
		s[13] != ':' || s[16] != ':' || s[19] != 'Z' {
		return time.Time{}, false
	}
	num := func(i, n int) int {
		v := 0
		for _, c := range []byte(s[i : i+n]) {
			if c < '0' || c > '9' {
				return -1
			}
			v = v*10 + int(c-'0')
		}
		return v
	}
	year, month, day := num(0, 4), num(5, 2), num(8, 2)
	hour, minute, sec := num(11, 2), num(14, 2), num(17, 2)
	if year < 0 || month < 1 || month > 12 || day < 1 || hour < 0 || hour > 23 ||
		minute < 0 || minute > 59 || sec < 0 || sec > 59 {
		return time.Time{}, false
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, 0, time.UTC)
	if t.Day() != day { // time.Date normalises February 30 to March 2
		return time.Time{}, false
	}
	return t, validTime(t)
}

// validText reports whether s is non-empty, valid UTF-8 and free of control
// characters (C0, DEL and C1), which have no place in a name and could
// rewrite a terminal that prints it.
func validText(s string) bool {
	return s != "" && noControls(s)
}

// validPath reports whether s is a request path: it starts with "/" and has
// no control characters.
func validPath(s string) bool {
	return len(s) > 0 && s[0] == '/' && noControls(s)
}

// noControls reports whether s is valid UTF-8 without control characters.
// It looks at bytes, not runes: C1 controls (U+0080–U+009F) are the only
// ones outside ASCII, and they all encode as 0xC2 followed by 0x80–0x9F.
func noControls(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f || c == 0xc2 && i+1 < len(s) && s[i+1] < 0xa0 {
			return false
		}
	}
	return utf8.ValidString(s)
}

// validChecksum reports whether s is "sha256:" and 64 lower-case hex
// characters.
func validChecksum(s string) bool {
	const prefix = "sha256:"
	if len(s) != len(prefix)+64 || s[:len(prefix)] != prefix {
		return false
	}
	for i := len(prefix); i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// validZone reports whether s matches ^[a-z]+-[a-z]+$.
func validZone(s string) bool {
	hyphen := strings.IndexByte(s, '-')
	return hyphen > 0 && hyphen < len(s)-1 && lowerLetters(s[:hyphen]) && lowerLetters(s[hyphen+1:])
}

func lowerLetters(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 'a' || s[i] > 'z' {
			return false
		}
	}
	return true
}

// validCountry reports whether s is an officially assigned ISO 3166-1
// alpha-2 code. The shape alone would let "XX" or "EU" through.
func validCountry(s string) bool {
	if len(s) != 2 || s[0] < 'A' || s[0] > 'Z' || s[1] < 'A' || s[1] > 'Z' {
		return false
	}
	return strings.Contains(countryCodes, " "+s)
}
