package cdnapi_test

import (
	"strconv"
	"testing"

	"github.com/cdnapi/cdnapi"
)

func TestParseLimit(t *testing.T) {
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
		got, err := cdnapi.ParseLimit(tt.in)
		if tt.want == 0 {
			if cdnapi.ErrorCode(err) != cdnapi.CodeParameterInvalid {
				t.Errorf("ParseLimit(%q) = %d, %v; want parameter_invalid", tt.in, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseLimit(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
}

func TestParseRegionCode(t *testing.T) {
	tests := []struct {
		in string
		ok bool
	}{
		{"FRA1", true}, {"AMS9", true},
		{"", false}, {"fra1", false}, {"FRA", false}, {"FRA12", false}, {"FR11", false},
		{"FRAA", false}, {" FRA1", false}, {"ÄRA1", false},
	}
	for _, tt := range tests {
		_, err := cdnapi.ParseRegionCode(tt.in)
		if ok := err == nil; ok != tt.ok {
			t.Errorf("ParseRegionCode(%q) error = %v, want ok=%v", tt.in, err, tt.ok)
		}
		if err != nil && cdnapi.ErrorCode(err) != cdnapi.CodeParameterInvalid {
			t.Errorf("ParseRegionCode(%q) code = %q", tt.in, cdnapi.ErrorCode(err))
		}
	}
}

func TestValidID(t *testing.T) {
	tests := []struct {
		prefix, id string
		ok         bool
	}{
		{"fil_", "fil_a", true},
		{"fil_", "fil_0123456789012345678901234567890123456789012345678901234567890123", true},
		{"fil_", "fil_01234567890123456789012345678901234567890123456789012345678901234", false},
		{"fil_", "fil_", false},
		{"fil_", "ast_abc", false},
		{"fil_", "fil_a-b", false},
		{"ast_", "ast_Zz9", true},
	}
	for _, tt := range tests {
		if got := cdnapi.ValidID(tt.prefix, tt.id); got != tt.ok {
			t.Errorf("ValidID(%q, %q) = %v, want %v", tt.prefix, tt.id, got, tt.ok)
		}
	}
}

func TestWorst(t *testing.T) {
	order := []cdnapi.Status{
		cdnapi.StatusOperational, cdnapi.StatusUnderMaintenance, cdnapi.StatusDegradedPerformance,
		cdnapi.StatusPartialOutage, cdnapi.StatusMajorOutage,
	}
	for i, a := range order {
		for j, b := range order {
			want := a
			if j > i {
				want = b
			}
			if got := cdnapi.Worst(a, b); got != want {
				t.Errorf("Worst(%s, %s) = %s, want %s", a, b, got, want)
			}
		}
	}
}

func FuzzParseLimit(f *testing.F) {
	for _, s := range []string{"1", "20", "100", "0", "101", "-1", "1.5", " 5", "", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := cdnapi.ParseLimit(s)
		want, perr := strconv.ParseUint(s, 10, 64)
		accept := perr == nil && want >= 1 && want <= cdnapi.MaxLimit
		if accept != (err == nil) {
			t.Fatalf("ParseLimit(%q) = %d, %v; strconv says %d, %v", s, n, err, want, perr)
		}
		if err == nil && uint64(n) != want {
			t.Fatalf("ParseLimit(%q) = %d, want %d", s, n, want)
		}
		if err != nil && cdnapi.ErrorCode(err) != cdnapi.CodeParameterInvalid {
			t.Fatalf("ParseLimit(%q) error code %q", s, cdnapi.ErrorCode(err))
		}
	})
}

func FuzzParseRegionCode(f *testing.F) {
	for _, s := range []string{"FRA1", "fra1", "", "FRA12", "ÄRA1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		code, err := cdnapi.ParseRegionCode(s)
		if err != nil {
			if cdnapi.ErrorCode(err) != cdnapi.CodeParameterInvalid {
				t.Fatalf("ParseRegionCode(%q) error code %q", s, cdnapi.ErrorCode(err))
			}
			return
		}
		if code != s || len(s) != 4 {
			t.Fatalf("ParseRegionCode(%q) = %q", s, code)
		}
	})
}
