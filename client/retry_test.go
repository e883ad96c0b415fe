package client

import (
	"net/http"
	"testing"
	"time"
)

func TestBackoffStaysWithinItsCeiling(t *testing.T) {
	c := &Client{baseDelay: 100 * time.Millisecond, maxDelay: time.Second}
	for _, tt := range []struct {
		attempt int
		ceiling time.Duration
	}{
		{0, 100 * time.Millisecond},
		{1, 200 * time.Millisecond},
		{3, 800 * time.Millisecond},
		{4, time.Second},
		{40, time.Second}, // the shift would overflow
		{70, time.Second},
	} {
		var longest time.Duration
		for range 1000 {
			d := c.backoff(tt.attempt)
			if d < 0 || d > tt.ceiling {
				t.Fatalf("attempt %d: backoff %v outside [0, %v]", tt.attempt, d, tt.ceiling)
			}
			longest = max(longest, d)
		}
		if longest < tt.ceiling/2 {
			t.Errorf("attempt %d: longest of 1000 backoffs %v; full jitter should reach near %v", tt.attempt, longest, tt.ceiling)
		}
	}
	if d := (&Client{}).backoff(3); d != 0 {
		t.Errorf("zero delays: backoff %v", d)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 20, 14, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		header string
		want   time.Duration
	}{
		{"", 0},
		{"5", 5 * time.Second},
		{"0", 0},
		{"-1", 0},
		{"soon", 0},
		{"1.5", 0},
		{now.Add(7 * time.Second).Format(http.TimeFormat), 7 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
	} {
		if got := parseRetryAfter(tt.header, now); got != tt.want {
			t.Errorf("Retry-After %q: %v, want %v", tt.header, got, tt.want)
		}
	}
}
