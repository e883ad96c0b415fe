package httpapi

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
)

// testCodec returns a codec with a fixed key, for the parsing tests.
func testCodec(t testing.TB) *cdnapi.CursorCodec {
	c, err := cdnapi.NewCursorCodec([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var testPosition = cdnapi.Position{CreatedAt: time.Date(2026, 11, 20, 14, 3, 7, 0, time.UTC), ID: "fil_8Kq2"}

// queryCases are the query strings of the parsing tests; they also seed
// the fuzz targets.
var queryCases = []struct {
	name, raw string
	code      string // "" for success
	param     string
}{
	{"empty", "", "", ""},
	{"limit", "limit=7", "", ""},
	{"limit max", "limit=100", "", ""},
	{"limit leading zero", "limit=007", "", ""},
	{"empty pairs", "&&limit=7&", "", ""},
	{"limit empty", "limit=", cdnapi.CodeParameterInvalid, "limit"},
	{"limit bare", "limit", cdnapi.CodeParameterInvalid, "limit"},
	{"limit zero", "limit=0", cdnapi.CodeParameterInvalid, "limit"},
	{"limit 101", "limit=101", cdnapi.CodeParameterInvalid, "limit"},
	{"limit sign", "limit=%2B1", cdnapi.CodeParameterInvalid, "limit"},
	{"limit space", "limit=+1", cdnapi.CodeParameterInvalid, "limit"},
	{"limit hex", "limit=0x10", cdnapi.CodeParameterInvalid, "limit"},
	{"limit exponent", "limit=1e2", cdnapi.CodeParameterInvalid, "limit"},
	{"limit overflow", "limit=18446744073709551617", cdnapi.CodeParameterInvalid, "limit"},
	{"limit unicode digit", "limit=%D9%A1", cdnapi.CodeParameterInvalid, "limit"},
	{"limit twice", "limit=1&limit=1", cdnapi.CodeParameterInvalid, "limit"},
	{"cursor empty", "cursor=", cdnapi.CodeCursorInvalid, "cursor"},
	{"cursor junk", "cursor=abc", cdnapi.CodeCursorInvalid, "cursor"},
	{"cursor std base64", "cursor=ab%2Bc%2F%3D", cdnapi.CodeCursorInvalid, "cursor"},
	{"cursor twice", "cursor=a&cursor=a", cdnapi.CodeParameterInvalid, "cursor"},
	{"unknown", "page=1", cdnapi.CodeParameterUnknown, "page"},
	{"unknown before bad limit", "x=1&limit=0", cdnapi.CodeParameterUnknown, "x"},
	{"bad limit before unknown", "limit=0&x=1", cdnapi.CodeParameterUnknown, "x"},
	{"unknown case", "Limit=5", cdnapi.CodeParameterUnknown, "Limit"},
	{"unknown odd name", "a%3Cb=1", cdnapi.CodeParameterUnknown, ""},
	{"unknown empty name", "=1", cdnapi.CodeParameterUnknown, ""},
	{"bad escape", "limit=%G0", cdnapi.CodeParameterInvalid, ""},
	{"bad escape in name", "%=1", cdnapi.CodeParameterInvalid, ""},
	{"semicolon", "limit=1;x", cdnapi.CodeParameterInvalid, ""},
}

// TestParseFilesQuery checks the query parsing of the files list.
func TestParseFilesQuery(t *testing.T) {
	codec := testCodec(t)
	for _, tc := range queryCases {
		t.Run(tc.name, func(t *testing.T) {
			q, err := parseFilesQuery(tc.raw, codec, "proj")
			checkParseError(t, err, tc.code, tc.param)
			if err == nil && (q.cursors != codec.Files("proj") || q.limit < 1 || q.limit > cdnapi.MaxLimit) {
				t.Errorf("query %+v", q)
			}
		})
	}
	good := codec.Encode(cdnapi.CursorFiles, "proj", testPosition)
	for _, tc := range []struct {
		name, raw   string
		limit       int
		after       bool
		code, param string
	}{
		{"defaults", "", cdnapi.DefaultLimit, false, "", ""},
		{"limit and cursor", "limit=5&cursor=" + good, 5, true, "", ""},
		{"cursor and limit", "cursor=" + good + "&limit=5", 5, true, "", ""},
		{"other project", "cursor=" + codec.Encode(cdnapi.CursorFiles, "other", testPosition), 0, false, cdnapi.CodeCursorInvalid, "cursor"},
		{"assets cursor", "cursor=" + codec.Encode(cdnapi.CursorAssets, "proj", testPosition), 0, false, cdnapi.CodeCursorInvalid, "cursor"},
		{"region given", "region=FRA1", 0, false, cdnapi.CodeParameterUnknown, "region"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := parseFilesQuery(tc.raw, codec, "proj")
			checkParseError(t, err, tc.code, tc.param)
			if err != nil {
				return
			}
			if q.limit != tc.limit || (q.after != nil) != tc.after {
				t.Fatalf("query %+v, want limit %d, after %v", q, tc.limit, tc.after)
			}
			if q.after != nil && (!q.after.CreatedAt.Equal(testPosition.CreatedAt) || q.after.ID != testPosition.ID) {
				t.Errorf("after %+v, want %+v", *q.after, testPosition)
			}
		})
	}
}

// TestParseAssetsQuery checks the query parsing of the assets list.
func TestParseAssetsQuery(t *testing.T) {
	codec := testCodec(t)
	all := codec.Encode(cdnapi.CursorAssets, "", testPosition)
	fra := codec.Encode(cdnapi.CursorAssets, "FRA1", testPosition)
	for _, tc := range []struct {
		name, raw, region, code, param string
	}{
		{"none", "", "", "", ""},
		{"region", "region=FRA1", "FRA1", "", ""},
		{"region and cursor", "region=FRA1&cursor=" + fra, "FRA1", "", ""},
		{"cursor before region", "cursor=" + fra + "&region=FRA1", "FRA1", "", ""},
		{"all-regions cursor", "cursor=" + all, "", "", ""},
		{"region cursor without region", "cursor=" + fra, "", cdnapi.CodeCursorInvalid, "cursor"},
		{"all-regions cursor with region", "region=FRA1&cursor=" + all, "", cdnapi.CodeCursorInvalid, "cursor"},
		{"cursor of another region", "region=IAD1&cursor=" + fra, "", cdnapi.CodeCursorInvalid, "cursor"},
		{"files cursor", "cursor=" + codec.Encode(cdnapi.CursorFiles, "", testPosition), "", cdnapi.CodeCursorInvalid, "cursor"},
		{"region lower", "region=fra1", "", cdnapi.CodeParameterInvalid, "region"},
		{"region empty", "region=", "", cdnapi.CodeParameterInvalid, "region"},
		{"region spaces", "region=+FRA1", "", cdnapi.CodeParameterInvalid, "region"},
		{"region twice", "region=FRA1&region=IAD1", "", cdnapi.CodeParameterInvalid, "region"},
		{"bad region before bad cursor", "cursor=x&region=x", "", cdnapi.CodeParameterInvalid, "region"},
		{"bad limit first", "region=x&limit=0", "", cdnapi.CodeParameterInvalid, "limit"},
		{"unknown", "project=x", "", cdnapi.CodeParameterUnknown, "project"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, region, err := parseAssetsQuery(tc.raw, codec)
			checkParseError(t, err, tc.code, tc.param)
			if err == nil && region != tc.region {
				t.Errorf("region %q, want %q", region, tc.region)
			}
		})
	}
	for _, tc := range queryCases {
		t.Run("common/"+tc.name, func(t *testing.T) {
			_, _, err := parseAssetsQuery(tc.raw, codec)
			checkParseError(t, err, tc.code, tc.param)
		})
	}
}

// TestParseNoQuery checks the endpoints that take no parameters.
func TestParseNoQuery(t *testing.T) {
	for _, tc := range []struct{ raw, code, param string }{
		{"", "", ""},
		{"&", "", ""},
		{"limit=5", cdnapi.CodeParameterUnknown, "limit"},
		{"x", cdnapi.CodeParameterUnknown, "x"},
		{"%", cdnapi.CodeParameterInvalid, ""},
	} {
		checkParseError(t, parseNoQuery(tc.raw), tc.code, tc.param)
	}
}

// checkParseError fails t unless err is nil when code is "", and otherwise a
// *cdnapi.Error with code and param.
func checkParseError(t *testing.T, err error, code, param string) {
	t.Helper()
	if code == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	e, ok := errors.AsType[*cdnapi.Error](err)
	if !ok {
		t.Fatalf("error %v, want a *cdnapi.Error with code %s", err, code)
	}
	if e.Code != code || e.Param != param {
		t.Fatalf("error %s (param %q), want %s (param %q): %s", e.Code, e.Param, code, param, e.Message)
	}
	if e.Message == "" || strings.ContainsAny(e.Message, "<>") {
		t.Errorf("message %q", e.Message)
	}
}

// checkFuzzError fails t unless err is nil or a *cdnapi.Error whose code
// maps to 400.
func checkFuzzError(t *testing.T, input string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	e, ok := errors.AsType[*cdnapi.Error](err)
	if !ok {
		t.Fatalf("%q: error %v is not a *cdnapi.Error", input, err)
	}
	if errorStatus[e.Code] != 400 {
		t.Fatalf("%q: code %s is not a 400", input, e.Code)
	}
	if e.Param != "" && !plausibleParamName(e.Param) {
		t.Fatalf("%q: param %q echoes input", input, e.Param)
	}
}

// FuzzLimit feeds arbitrary limit values through the files query parser.
func FuzzLimit(f *testing.F) {
	for _, s := range []string{"", "0", "1", "20", "100", "101", "-1", "+1", " 1", "1 ", "1.0", "1e2", "0x10", "99999999999999999999", "٣"} {
		f.Add(s)
	}
	codec := testCodec(f)
	f.Fuzz(func(t *testing.T, s string) {
		q, err := parseFilesQuery("limit="+url.QueryEscape(s), codec, "proj")
		checkFuzzError(t, s, err)
		if err == nil {
			if q.limit < 1 || q.limit > cdnapi.MaxLimit {
				t.Fatalf("%q: limit %d accepted", s, q.limit)
			}
			for _, c := range []byte(s) {
				if c < '0' || c > '9' {
					t.Fatalf("%q accepted as a limit", s)
				}
			}
		}
	})
}

// FuzzCursor feeds arbitrary cursors through both list parsers. Only the
// cursors the codec issued for that list and filter may pass.
func FuzzCursor(f *testing.F) {
	codec := testCodec(f)
	for _, s := range []string{
		codec.Encode(cdnapi.CursorFiles, "proj", testPosition),
		codec.Encode(cdnapi.CursorAssets, "", testPosition),
		codec.Encode(cdnapi.CursorAssets, "FRA1", testPosition),
	} {
		f.Add(s)
	}
	for _, s := range []string{"", "A", "AAAA", "abc=", "ab+c/", "%00", strings.Repeat("A", 200)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		esc := url.QueryEscape(s)
		fq, err := parseFilesQuery("cursor="+esc, codec, "proj")
		checkFuzzError(t, s, err)
		if err == nil && s != codec.Encode(cdnapi.CursorFiles, "proj", *fq.after) {
			t.Fatalf("files accepted the cursor %q", s)
		}
		for _, region := range []string{"", "FRA1"} {
			raw := "cursor=" + esc
			if region != "" {
				raw += "&region=" + region
			}
			aq, _, err := parseAssetsQuery(raw, codec)
			checkFuzzError(t, s, err)
			if err == nil && s != codec.Encode(cdnapi.CursorAssets, region, *aq.after) {
				t.Fatalf("assets of %q accepted the cursor %q", region, s)
			}
		}
	})
}

// FuzzRegion feeds arbitrary region values through the assets parser.
func FuzzRegion(f *testing.F) {
	for _, s := range []string{"", "FRA1", "fra1", "FRA", "FRA12", "FR1A", "ÉRA1", " FRA1", "FRA1 ", "ZZZ9"} {
		f.Add(s)
	}
	codec := testCodec(f)
	f.Fuzz(func(t *testing.T, s string) {
		_, region, err := parseAssetsQuery("region="+url.QueryEscape(s), codec)
		checkFuzzError(t, s, err)
		if err == nil && (region != s || !cdnapi.ValidRegionCode(s)) {
			t.Fatalf("%q accepted as region %q", s, region)
		}
	})
}

// FuzzQuery feeds arbitrary raw query strings through every parser.
func FuzzQuery(f *testing.F) {
	for _, tc := range queryCases {
		f.Add(tc.raw)
	}
	f.Add("region=FRA1&limit=5")
	codec := testCodec(f)
	f.Fuzz(func(t *testing.T, raw string) {
		_, err := parseFilesQuery(raw, codec, "proj")
		checkFuzzError(t, raw, err)
		_, _, err = parseAssetsQuery(raw, codec)
		checkFuzzError(t, raw, err)
		checkFuzzError(t, raw, parseNoQuery(raw))
	})
}
