package cdnapi_test

import (
	"strings"
	"testing"

	"github.com/cdnapi/cdnapi"
)

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

func TestValidProject(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"default", true},
		{"a", true},
		{"Acme.eu_2-b", true},
		{"9lives", true},
		{strings.Repeat("p", 64), true},
		{strings.Repeat("p", 65), false},
		{"", false},
		{"-lead", false},
		{".hidden", false},
		{"my project", false},
		{"projekt-ü", false},
		{"a/b", false},
	}
	for _, tt := range tests {
		if got := cdnapi.ValidProject(tt.name); got != tt.ok {
			t.Errorf("ValidProject(%q) = %v, want %v", tt.name, got, tt.ok)
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

func TestValidRegionCode(t *testing.T) {
	for in, want := range map[string]bool{
		"FRA1": true, "AMS9": true,
		"": false, "fra1": false, "FRA": false, "FRA12": false, "FR11": false, "FRAA": false, "ÄRA1": false,
	} {
		if got := cdnapi.ValidRegionCode(in); got != want {
			t.Errorf("ValidRegionCode(%q) = %v, want %v", in, got, want)
		}
	}
}
