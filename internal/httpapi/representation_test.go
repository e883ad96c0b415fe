package httpapi

import "testing"

// TestNoneMatch checks the reading of If-None-Match field values: a tag
// matches only the answer in its own coding.
func TestNoneMatch(t *testing.T) {
	const tag = "abc"
	for _, tc := range []struct {
		values                []string
		plain, gzipped, zstdd bool // matches the identity, gzip and zstd answer
	}{
		{[]string{`"abc"`}, true, false, false},
		{[]string{`W/"abc"`}, true, false, false},
		{[]string{`"abc-gzip"`}, false, true, false},
		{[]string{`W/"abc-gzip"`}, false, true, false},
		{[]string{`"abc-zstd"`}, false, false, true},
		{[]string{`"abc-gzip", "abc-zstd"`}, false, true, true},
		{[]string{`*`}, true, true, true},
		{[]string{` "x" , "abc" `}, true, false, false},
		{[]string{`"x"`, `"abc"`}, true, false, false},
		{[]string{`"a,b", "abc"`}, true, false, false}, // a comma inside a tag
		{[]string{`abc`}, false, false, false},         // unquoted
		{[]string{`"ab"`, `"abcd"`, `"abc-gz"`, `"abc-gzipx"`, `"abc-zst"`}, false, false, false},
		{[]string{`junk, W/"abc"`}, true, false, false},
		{[]string{`"abc`}, false, false, false}, // unterminated
		{[]string{`W/`}, false, false, false},
		{[]string{``}, false, false, false},
	} {
		for c, want := range map[coding]bool{identity: tc.plain, codingGzip: tc.gzipped, codingZstd: tc.zstdd} {
			if got := noneMatch(tc.values, tag, c); got != want {
				t.Errorf("noneMatch(%q, coding %d) = %v, want %v", tc.values, c, got, want)
			}
		}
	}
}

// TestChooseCoding checks the reading of Accept-Encoding field values.
func TestChooseCoding(t *testing.T) {
	for _, tc := range []struct {
		values []string
		want   coding
	}{
		{nil, identity},
		{[]string{"gzip"}, codingGzip},
		{[]string{"x-gzip"}, codingGzip},
		{[]string{"Gzip"}, codingGzip},
		{[]string{"deflate, gzip;q=0.5"}, codingGzip},
		{[]string{"deflate", "gzip"}, codingGzip},
		{[]string{"gzip;q=0"}, identity},
		{[]string{"gzip; q=0.0"}, identity},
		{[]string{"gzip;Q=0."}, identity},
		{[]string{"gzip;q=0.000"}, identity},
		{[]string{"gzip;q=0.001"}, codingGzip},
		{[]string{"gzip;q=1"}, codingGzip},
		{[]string{"*"}, codingGzip}, // "*" stands for gzip, not zstd
		{[]string{"*;q=0"}, identity},
		{[]string{"gzip;q=0, *"}, identity}, // gzip named: "*" does not cover it
		{[]string{"identity"}, identity},
		{[]string{"br, deflate"}, identity},
		{[]string{"zstd"}, codingZstd},
		{[]string{"ZSTD;q=0.5"}, codingZstd},
		{[]string{"gzip, deflate, br, zstd"}, codingZstd}, // a browser's: zstd on a tie
		{[]string{"gzip", "zstd"}, codingZstd},
		{[]string{"zstd;q=0.5, gzip"}, codingGzip},
		{[]string{"zstd, gzip;q=0.9"}, codingZstd},
		{[]string{"zstd;q=0, gzip"}, codingGzip},
		{[]string{"zstd;q=0"}, identity},
		{[]string{"zstd;q=0.2, *;q=0.5"}, codingGzip},
	} {
		if got := chooseCoding(tc.values); got != tc.want {
			t.Errorf("chooseCoding(%q) = %d, want %d", tc.values, got, tc.want)
		}
	}
}
