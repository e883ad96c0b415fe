package httpapi

import (
	"strconv"
	"testing"

	"github.com/cdnapi/cdnapi"
)

// The checks of single parameter values, moved here from the root package
// with parseLimitValue and parseRegionValue.

func TestParseLimitValue(t *testing.T) {
	tests := []struct {
		in   string
		want int // 0: refused
	}{
		{"1", 1}, {"20", 20}, {"100", 100}, {"007", 7},
		{"", 0}, {"0", 0}, {"-1", 0}, {"101", 0}, {"1.5", 0}, {"1e2", 0},
		{" 5", 0}, {"5 ", 0}, {"+5", 0}, {"0x10", 0}, {"abc", 0},
		{"99999999999999999999999999", 0}, {"٣", 0},
	}
	for _, tt := range tests {
		got, err := parseLimitValue(tt.in)
		if tt.want == 0 {
			if cdnapi.ErrorCode(err) != cdnapi.CodeParameterInvalid {
				t.Errorf("parseLimitValue(%q) = %d, %v; want parameter_invalid", tt.in, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("parseLimitValue(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
}

func TestParseRegionValue(t *testing.T) {
	tests := []struct {
		in string
		ok bool
	}{
		{"FRA1", true}, {"AMS9", true},
		{"", false}, {"fra1", false}, {"FRA", false}, {"FRA12", false}, {"FR11", false},
		{"FRAA", false}, {" FRA1", false}, {"ÄRA1", false},
	}
	for _, tt := range tests {
		_, err := parseRegionValue(tt.in)
		if ok := err == nil; ok != tt.ok {
			t.Errorf("parseRegionValue(%q) error = %v, want ok=%v", tt.in, err, tt.ok)
		}
		if err != nil && cdnapi.ErrorCode(err) != cdnapi.CodeParameterInvalid {
			t.Errorf("parseRegionValue(%q) code = %q", tt.in, cdnapi.ErrorCode(err))
		}
	}
}

func FuzzParseLimitValue(f *testing.F) {
	for _, s := range []string{"1", "20", "100", "0", "101", "-1", "1.5", " 5", "", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseLimitValue(s)
		want, perr := strconv.ParseUint(s, 10, 64)
		accept := perr == nil && want >= 1 && want <= cdnapi.MaxLimit
		if accept != (err == nil) {
			t.Fatalf("parseLimitValue(%q) = %d, %v; strconv says %d, %v", s, n, err, want, perr)
		}
		if err == nil && uint64(n) != want {
			t.Fatalf("parseLimitValue(%q) = %d, want %d", s, n, want)
		}
		if err != nil && cdnapi.ErrorCode(err) != cdnapi.CodeParameterInvalid {
			t.Fatalf("parseLimitValue(%q) error code %q", s, cdnapi.ErrorCode(err))
		}
	})
}

func FuzzParseRegionValue(f *testing.F) {
	for _, s := range []string{"FRA1", "fra1", "", "FRA12", "ÄRA1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		code, err := parseRegionValue(s)
		if err != nil {
			if cdnapi.ErrorCode(err) != cdnapi.CodeParameterInvalid {
				t.Fatalf("parseRegionValue(%q) error code %q", s, cdnapi.ErrorCode(err))
			}
			return
		}
		if code != s || len(s) != 4 {
			t.Fatalf("parseRegionValue(%q) = %q", s, code)
		}
	})
}
