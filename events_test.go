package cdnapi

import (
	"slices"
	"testing"
	"time"
)

// TestSigningSecrets: the previous secret signs until PreviousUntil and not
// at it, and never when there is none.
func TestSigningSecrets(t *testing.T) {
	until := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	w := Webhook{Secret: "new", PreviousSecret: "old", PreviousUntil: until}
	for _, tt := range []struct {
		w    Webhook
		at   time.Time
		want []string
	}{
		{w, until.Add(-time.Nanosecond), []string{"new", "old"}},
		{w, until, []string{"new"}},
		{Webhook{Secret: "new"}, until, []string{"new"}},
		{Webhook{Secret: "new", PreviousUntil: until}, until.Add(-time.Hour), []string{"new"}},
	} {
		if got := tt.w.SigningSecrets(tt.at); !slices.Equal(got, tt.want) {
			t.Errorf("%+v at %v: %v, want %v", tt.w, tt.at, got, tt.want)
		}
	}
}
