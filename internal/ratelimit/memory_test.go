package ratelimit

import (
	"testing"
	"time"
)

func TestMemoryBucket(t *testing.T) {
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	m := NewMemory(Policy{Rate: 10, Burst: 20})

	type step struct {
		advance   time.Duration
		client    string
		allowed   bool
		remaining int
		retry     time.Duration
	}
	var steps []step
	for i := range 20 { // the burst
		steps = append(steps, step{0, "a", true, 19 - i, 0})
	}
	steps = append(steps,
		step{0, "a", false, 0, 100 * time.Millisecond}, // empty: one token in 1/10 s
		step{0, "b", true, 19, 0},                      // another client has its own bucket
		step{100 * time.Millisecond, "a", true, 0, 0},  // refilled one token
		step{0, "a", false, 0, 100 * time.Millisecond}, //
		step{550 * time.Millisecond, "a", true, 4, 0},  // 5.5 tokens back
		step{10 * time.Second, "a", true, 19, 0},       // full again, never more than the burst
	)
	for i, s := range steps {
		now = now.Add(s.advance)
		d := m.Take(t.Context(), s.client, now)
		if !d.Limited || d.Allowed != s.allowed || d.Remaining != s.remaining || d.RetryAfter != s.retry {
			t.Fatalf("step %d (%+v): got %+v", i, s, d)
		}
		if d.Burst != 20 || d.Window != 2*time.Second {
			t.Fatalf("step %d: policy %d/%v, want 20/2s", i, d.Burst, d.Window)
		}
		if want := time.Duration(20-s.remaining) * 100 * time.Millisecond; s.allowed && s.remaining > 0 && d.Reset > want {
			t.Fatalf("step %d: Reset %v, want at most %v", i, d.Reset, want)
		}
	}
}

func TestMemoryEvictsIdleBuckets(t *testing.T) {
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	m := NewMemory(Policy{Rate: 10, Burst: 20}) // a window of 2 s
	for i := range 1000 {
		m.Take(t.Context(), string(rune('A'+i%26))+string(rune(i)), now)
	}
	if n := m.Len(); n != 1000 {
		t.Fatalf("%d buckets after 1000 clients, want 1000", n)
	}
	// A client that drained its bucket is not forgotten while it could
	// still be empty.
	for range 25 {
		m.Take(t.Context(), "busy", now)
	}
	now = now.Add(time.Second)
	if d := m.Take(t.Context(), "busy", now); d.Remaining > 10 {
		t.Fatalf("busy client got %d tokens back after 1 s, at most 10 refill", d.Remaining)
	}
	now = now.Add(2 * time.Second)
	m.Take(t.Context(), "busy", now)
	if n := m.Len(); n != 1 {
		t.Errorf("%d buckets after a window idle, want 1 (the busy client)", n)
	}
}
