package auth

import (
	"fmt"
	"testing"
)

func TestSeenKeys(t *testing.T) {
	var s seenKeys
	a, b := &entry{}, &entry{}
	if s.lookup("cdk_a") != nil {
		t.Fatal("an empty set found a key")
	}
	s.add("cdk_a", a)
	s.add("cdk_b", b)
	for _, tt := range []struct {
		key  string
		want *entry
	}{
		{"cdk_a", a},
		{"cdk_b", b},
		{"cdk_c", nil},
		{"cdk_", nil},
		{"cdk_aa", nil},
	} {
		if got := s.lookup(tt.key); got != tt.want {
			t.Errorf("lookup(%q) = %p, want %p", tt.key, got, tt.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { s.lookup("cdk_a") }); n != 0 {
		t.Errorf("lookup allocates %v times", n)
	}
	for i := range 2 * maxSeen {
		s.add(fmt.Sprintf("cdk_%d", i), a)
	}
	if n := len(*s.m.Load()); n != maxSeen {
		t.Errorf("%d keys remembered, want at most %d", n, maxSeen)
	}
}

func TestEqualConstantTime(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want bool
	}{
		{"", "", true},
		{"cdk_x", "cdk_x", true},
		{"cdk_x", "cdk_y", false},
		{"cdk_x", "cdk_xy", false},
		{"ydk_x", "cdk_x", false},
	} {
		if got := equalConstantTime(tt.a, tt.b); got != tt.want {
			t.Errorf("equalConstantTime(%q, %q) = %v", tt.a, tt.b, got)
		}
	}
}
