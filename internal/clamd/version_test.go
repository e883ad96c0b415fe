package clamd

import (
	"testing"
	"time"
)

func TestParseVersion(t *testing.T) {
	v, err := parseVersion("ClamAV 1.0.7/27450/Tue Nov  3 09:40:32 2026")
	want := time.Date(2026, 11, 3, 9, 40, 32, 0, time.Local)
	if err != nil || v.Engine != "1.0.7" || v.Database != 27450 || !v.Signatures.Equal(want) {
		t.Errorf("got %+v, %v", v, err)
	}
	v, err = parseVersion("ClamAV 1.0.7")
	if err != nil || v.Engine != "1.0.7" || v.Database != 0 || !v.Signatures.IsZero() || v.Raw != "ClamAV 1.0.7" {
		t.Errorf("got %+v, %v", v, err)
	}
	for _, s := range []string{"", "PONG", "ClamAV ", "ClamAV 1.0.7/x/Tue Nov  3 09:40:32 2026",
		"ClamAV 1.0.7/1/yesterday", "ClamAV 1.0.7/1"} {
		if v, err := parseVersion(s); err == nil {
			t.Errorf("parseVersion(%q) = %+v, want an error", s, v)
		}
	}
}
