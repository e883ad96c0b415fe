package httpapi

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/cdnapi/cdnapi"
)

// stringCases are strings that stress the escaper: every class of byte it
// treats differently.
var stringCases = []string{
	"", "plain", `quote " and backslash \`, "<script>&amp;</script>",
	"\x00\x01\x07\b\t\n\v\f\r\x1b\x1f\x7f", "é ü ß 日本語 🚀",
	"line\u2028sep\u2029para", "bad \xff byte", "\xc3", "\xe2\x80", "\xed\xa0\x80 surrogate",
	"\xf4\x90\x80\x80 beyond U+10FFFF", "overlong \xc0\xaf", "mixed \xff<\u2028\x00é",
	strings.Repeat("a", 1000),
}

// TestAppendStringMatchesEncodingJSON checks appendString byte for byte
// against encoding/json, on the table and on random strings: random bytes,
// random runes, and runes from the ranges that need care.
func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	inputs := append([]string(nil), stringCases...)
	for range 20000 {
		inputs = append(inputs, randomString(rng))
	}
	for _, s := range inputs {
		got := appendString(nil, s)
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("appendString(%q) = %s, encoding/json: %s", s, got, want)
		}
		if !json.Valid(got) {
			t.Fatalf("appendString(%q) = %s is not valid JSON", s, got)
		}
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatal(err)
		}
		if utf8.ValidString(s) && back != s {
			t.Fatalf("%q came back as %q", s, back)
		}
		if bytes.ContainsAny(got, "<>&\u2028\u2029") {
			t.Fatalf("appendString(%q) = %s leaves an HTML or line separator character", s, got)
		}
	}
}

// randomString returns a string of one of several random kinds.
func randomString(rng *rand.Rand) string {
	n := rng.IntN(24)
	var b []byte
	switch rng.IntN(3) {
	case 0: // any bytes
		for range n {
			b = append(b, byte(rng.IntN(256)))
		}
	case 1: // any valid runes
		for range n {
			b = utf8.AppendRune(b, rune(rng.IntN(utf8.MaxRune+1)))
		}
	default: // the characters the escaper treats specially, and neighbours
		special := []rune{0, 0x1f, 0x20, '"', '\\', '<', '>', '&', 0x7f, 0x80, 0x2027, 0x2028, 0x2029, 0x202a, 0xfffd, 0xffff, 0x10000}
		for range n {
			if rng.IntN(4) == 0 {
				b = append(b, byte(0x80+rng.IntN(0x80))) // a stray continuation or lead byte
			} else {
				b = utf8.AppendRune(b, special[rng.IntN(len(special))])
			}
		}
	}
	return string(b)
}

// FuzzAppendString checks appendString against encoding/json on any input.
func FuzzAppendString(f *testing.F) {
	for _, s := range stringCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := appendString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("appendString(%q) = %s, encoding/json: %s", s, got, want)
		}
	})
}

// TestAppendTime checks that appendTime writes what cdnapi.Timestamp does.
func TestAppendTime(t *testing.T) {
	for _, tm := range []time.Time{
		time.Date(2026, 11, 20, 14, 3, 7, 999_999_999, time.UTC),
		time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("CET", 3600)),
		time.Unix(0, 0),
	} {
		if got, want := string(appendTime(nil, tm)), `"`+cdnapi.Timestamp(tm)+`"`; got != want {
			t.Errorf("appendTime(%v) = %s, want %s", tm, got, want)
		}
	}
}

// TestAppendItems checks each encoder against encoding/json of the same
// fields, with awkward strings in every string field.
func TestAppendItems(t *testing.T) {
	at := time.Date(2026, 11, 20, 14, 3, 7, 500, time.UTC)
	for _, s := range stringCases {
		check := func(what string, got []byte, want any) {
			t.Helper()
			w, err := json.Marshal(want)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, w) {
				t.Errorf("%s(%q):\n got %s\nwant %s", what, s, got, w)
			}
		}
		type file struct {
			ID        string `json:"id"`
			CreatedAt string `json:"created_at"`
			Filename  string `json:"filename"`
			Bytes     int64  `json:"bytes"`
			Checksum  string `json:"checksum"`
		}
		check("appendFile", appendFile(nil, cdnapi.File{ID: s, CreatedAt: at, Filename: s, Bytes: -1 << 63, Checksum: s}),
			file{s, cdnapi.Timestamp(at), s, -1 << 63, s})
		type asset struct {
			ID          string `json:"id"`
			CreatedAt   string `json:"created_at"`
			Path        string `json:"path"`
			Bytes       int64  `json:"bytes"`
			CacheStatus string `json:"cache_status"`
			Region      string `json:"region"`
		}
		check("appendAsset", appendAsset(nil, cdnapi.Asset{ID: s, CreatedAt: at, Path: s, Bytes: 1<<63 - 1, CacheStatus: cdnapi.CacheStatus(s), Region: s}),
			asset{s, cdnapi.Timestamp(at), s, 1<<63 - 1, s, s})
		type region struct {
			Code    string `json:"code"`
			Name    string `json:"name"`
			Zone    string `json:"zone"`
			Country string `json:"country"`
			Status  string `json:"status"`
		}
		check("appendRegion", appendRegion(nil, cdnapi.Region{Code: s, Name: s, Zone: s, Country: s, Status: cdnapi.Status(s)}),
			region{s, s, s, s, s})
		type component struct {
			Name   string `json:"name"`
			Status string `json:"status"`
		}
		type status struct {
			Status     string      `json:"status"`
			Version    string      `json:"version"`
			Region     string      `json:"region"`
			Components []component `json:"components"`
			UpdatedAt  string      `json:"updated_at"`
		}
		check("appendStatusDocument", appendStatusDocument(nil, cdnapi.StatusDocument{
			Status: cdnapi.Status(s), Version: s, Region: s, UpdatedAt: at,
			Components: []cdnapi.Component{{Name: s, Status: "a"}, {Name: "b", Status: cdnapi.Status(s)}},
		}), status{s, s, s, []component{{s, "a"}, {"b", s}}, cdnapi.Timestamp(at)})
		type errorFields struct {
			Type      string `json:"type"`
			Code      string `json:"code"`
			Message   string `json:"message"`
			Param     string `json:"param,omitempty"`
			RequestID string `json:"request_id"`
		}
		type errorBody struct {
			Error errorFields `json:"error"`
		}
		check("appendErrorBody", appendErrorBody(nil, s, s, s, s, s), errorBody{errorFields{s, s, s, s, s}})
	}
}

// TestAppendList checks the envelope: null next_cursor exactly when there
// is no next page.
func TestAppendList(t *testing.T) {
	itoa := func(b []byte, n int) []byte { return append(b, byte('0'+n)) }
	for _, tc := range []struct {
		items  []int
		cursor string
		want   string
	}{
		{nil, "", `{"object":"list","data":[],"has_more":false,"next_cursor":null}`},
		{[]int{1}, "", `{"object":"list","data":[1],"has_more":false,"next_cursor":null}`},
		{[]int{1, 2, 3}, "abc_-", `{"object":"list","data":[1,2,3],"has_more":true,"next_cursor":"abc_-"}`},
	} {
		if got := string(appendList(nil, tc.items, itoa, tc.cursor)); got != tc.want {
			t.Errorf("appendList(%v, %q) = %s, want %s", tc.items, tc.cursor, got, tc.want)
		}
	}
}

// BenchmarkAppendFilePage measures encoding a full page of files.
func BenchmarkAppendFilePage(b *testing.B) {
	files := make([]cdnapi.File, cdnapi.MaxLimit)
	for i := range files {
		files[i] = cdnapi.File{ID: "fil_8Kq2hT4mZ0pXa1b2c3", CreatedAt: time.Now(), Filename: "Quarterly report <final> é.pdf",
			Bytes: 123456789, Checksum: "sha256:" + strings.Repeat("ab", 32)}
	}
	buf := make([]byte, 0, 32<<10)
	b.ReportAllocs()
	for b.Loop() {
		buf = appendList(buf[:0], files, appendFile, "cursor")
	}
	b.SetBytes(int64(len(buf)))
}
