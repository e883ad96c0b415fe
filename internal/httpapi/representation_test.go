package httpapi

import "testing"

// TestNoneMatch checks the reading of If-None-Match field values.
func TestNoneMatch(t *testing.T) {
	const tag = "abc"
	for _, tc := range []struct {
		values             []string
		star, plain, coded bool
	}{
		{[]string{`"abc"`}, false, true, false},
		{[]string{`W/"abc"`}, false, true, false},
		{[]string{`"abc-gzip"`}, false, false, true},
		{[]string{`W/"abc-gzip"`}, false, false, true},
		{[]string{`*`}, true, false, false},
		{[]string{` "x" , "abc" `}, false, true, false},
		{[]string{`"x"`, `"abc"`}, false, true, false},
		{[]string{`"a,b", "abc"`}, false, true, false}, // a comma inside a tag
		{[]string{`abc`}, false, false, false},         // unquoted
		{[]string{`"ab"`, `"abcd"`, `"abc-gz"`, `"abc-gzipx"`}, false, false, false},
		{[]string{`junk, W/"abc"`}, false, true, false},
		{[]string{`"abc`}, false, false, false}, // unterminated
		{[]string{`W/`}, false, false, false},
		{[]string{``}, false, false, false},
	} {
		star, plain, coded := noneMatch(tc.values, tag)
		if star != tc.star || plain != tc.plain || coded != tc.coded {
			t.Errorf("noneMatch(%q) = %v %v %v, want %v %v %v", tc.values, star, plain, coded, tc.star, tc.plain, tc.coded)
		}
	}
}

// TestAcceptsGzip checks the reading of Accept-Encoding field values.
func TestAcceptsGzip(t *testing.T) {
	for _, tc := range []struct {
		values []string
		want   bool
	}{
		{nil, false},
		{[]string{"gzip"}, true},
		{[]string{"x-gzip"}, true},
		{[]string{"Gzip"}, true},
		{[]string{"deflate, gzip;q=0.5"}, true},
		{[]string{"deflate", "gzip"}, true},
		{[]string{"gzip;q=0"}, false},
		{[]string{"gzip; q=0.0"}, false},
		{[]string{"gzip;Q=0."}, false},
		{[]string{"gzip;q=0.000"}, false},
		{[]string{"gzip;q=0.001"}, true},
		{[]string{"gzip;q=1"}, true},
		{[]string{"*"}, true},
		{[]string{"*;q=0"}, false},
		{[]string{"gzip;q=0, *"}, false}, // gzip named: "*" does not cover it
		{[]string{"identity"}, false},
		{[]string{"br, deflate"}, false},
	} {
		if got := acceptsGzip(tc.values); got != tc.want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", tc.values, got, tc.want)
		}
	}
}
