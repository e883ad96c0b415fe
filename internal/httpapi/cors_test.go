package httpapi

import (
	"slices"
	"testing"
)

// TestNewCORSPolicy checks how configured origins are read.
func TestNewCORSPolicy(t *testing.T) {
	for _, tc := range []struct {
		in      []string
		any     bool
		origins []string
	}{
		{nil, true, nil},
		{[]string{""}, true, nil},
		{[]string{"*"}, true, nil},
		{[]string{"https://a.example", "*"}, true, nil},
		{[]string{" https://a.example ", "", "https://b.example"}, false, []string{"https://a.example", "https://b.example"}},
	} {
		p := newCORSPolicy(tc.in)
		if p.anyOrigin != tc.any || !slices.Equal(p.origins, tc.origins) {
			t.Errorf("newCORSPolicy(%q) = %+v, want any %v, origins %q", tc.in, *p, tc.any, tc.origins)
		}
	}
}
