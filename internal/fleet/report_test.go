package fleet

import (
	"errors"
	"math"
	"net/http"
	"slices"
	"testing"
	"time"
)

func TestOutcome(t *testing.T) {
	tests := []struct {
		name string
		s    sample
		want string
	}{
		{"a page", sample{status: http.StatusOK}, "ok"},
		{"over the limit", sample{status: http.StatusTooManyRequests, code: "rate_limited", retryAfter: true}, "limited"},
		{"storage out, as the contract says", sample{status: http.StatusServiceUnavailable, code: "storage_unavailable", retryAfter: true}, "unavailable"},
		{"storage out without Retry-After", sample{status: http.StatusServiceUnavailable, code: "storage_unavailable"}, "failed"},
		{"haproxy's own 503 (no server)", sample{status: http.StatusServiceUnavailable, retryAfter: false}, "failed"},
		{"haproxy's 502", sample{status: http.StatusBadGateway}, "failed"},
		{"no answer", sample{status: 0}, "failed"},
		{"a cursor refused", sample{status: http.StatusBadRequest, code: "cursor_invalid"}, "failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := outcome(tt.s); got != tt.want {
				t.Errorf("outcome = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRateRemaining(t *testing.T) {
	tests := []struct {
		header string
		want   int
		ok     bool
	}{
		{`"default";r=17;t=1`, 17, true},
		{`"default";r=0;t=2`, 0, true},
		{"", 0, false},
		{`"default";t=1`, 0, false},
	}
	for _, tt := range tests {
		if got, ok := rateRemaining(tt.header); got != tt.want || ok != tt.ok {
			t.Errorf("rateRemaining(%q) = %d, %v; want %d, %v", tt.header, got, ok, tt.want, tt.ok)
		}
	}
}

// gcra is the Redis limiter's algorithm (redis_rate's script): one bucket
// of rate tokens a second, up to burst, and what RateLimit's r= says.
type gcra struct {
	rate, burst float64
	tat         time.Time
}

func (g *gcra) take(now time.Time) (allowed bool, remaining int) {
	every := time.Duration(float64(time.Second) / g.rate)
	tat := g.tat
	if tat.Before(now) {
		tat = now
	}
	diff := now.Sub(tat.Add(every).Add(-time.Duration(g.burst) * every))
	if diff < 0 {
		return false, 0
	}
	g.tat = tat.Add(every)
	return true, int(diff / every)
}

func TestBucketRate(t *testing.T) {
	start := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	// send sends n requests a second for secs seconds, each to the next of
	// buckets (one: the fleet-wide limit; three: a limit per process),
	// each decided delay(i) after it was sent and answered then, and
	// returns the answers, in the order sent, from the first sent at
	// offset on.
	send := func(n int, secs, offset float64, delay func(i int) time.Duration, buckets ...*gcra) []sample {
		var all []sample
		for i := 0; float64(i) < secs*float64(n); i++ {
			at := start.Add(time.Duration(float64(i) / float64(n) * float64(time.Second)))
			all = append(all, sample{at: at, latency: delay(i), status: http.StatusOK, decided: true})
		}
		byDecision := slices.Clone(all)
		slices.SortStableFunc(byDecision, func(a, b sample) int { return a.at.Add(a.latency).Compare(b.at.Add(b.latency)) })
		decisions := map[time.Time]sample{}
		for k, s := range byDecision {
			ok, rem := buckets[k%len(buckets)].take(s.at.Add(s.latency))
			s.remaining = rem
			if !ok {
				s.status, s.code, s.retryAfter = http.StatusTooManyRequests, "rate_limited", true
			}
			decisions[s.at] = s
		}
		var out []sample
		for _, s := range all {
			if s.at.Sub(start).Seconds() >= offset {
				out = append(out, decisions[s.at])
			}
		}
		return out
	}
	none := func(int) time.Duration { return 0 }
	bucket := func() *gcra { return &gcra{rate: 20, burst: 20} }
	tests := []struct {
		name    string
		samples []sample
		want    float64 // per second, within 1 and the give
		maxGive float64 // the give allowed: none when answers take no time
		ok      bool
	}{
		{"a fresh bucket: its burst is not the rate", send(45, 3, 0, none, bucket()), 20, 0, true},
		{"an empty bucket", send(45, 3, 1.5, none, bucket()), 20, 0, true},
		{"a client just over the limit", send(30, 3, 0, none, bucket()), 20, 0, true},
		{"a bucket per process lets three times through", send(90, 6, 3, none, bucket(), bucket(), bucket()), 60, 0, true},
		// Every answer slower than the one before, up to 400 ms: the
		// count by sending time is off, and the give says by how much.
		{"answers slower at the end than at the start", send(45, 3, 0, func(i int) time.Duration {
			return time.Duration(i) * 3 * time.Millisecond
		}, bucket()), 20, 6, true},
		{"under a second: a burst, not a rate", send(45, 0.5, 0, none, bucket()), 0, 0, false},
		{"one answer", send(45, 3, 0, none, bucket())[:1], 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, give, ok := bucketRate(tt.samples, 20)
			if ok != tt.ok || math.Abs(got-tt.want) > 1+give {
				t.Errorf("bucketRate = %.2f ± %.2f, %v; want %.0f, %v", got, give, ok, tt.want, tt.ok)
			}
			if give > tt.maxGive {
				t.Errorf("give %.2f, want at most %.0f", give, tt.maxGive)
			}
		})
	}
}

// TestHeldAgainst: an answer that came after its step ended is held against
// the next step when that step permits it, and only then.
func TestHeldAgainst(t *testing.T) {
	r := &Report{steps: []stepReport{
		{step: step{name: "0 steady"}, inflight: -1},
		{step: step{name: "1 kill"}, inflight: 12},
		{step: step{name: "2 roll"}, inflight: -1},
		{step: step{name: "3d both stopped", storageDown: true}, inflight: -1},
	}}
	unavailable := sample{status: http.StatusServiceUnavailable, code: "storage_unavailable", retryAfter: true}
	tests := []struct {
		name           string
		sent, answered int
		s              sample
		want           int
	}{
		{"a 503 sent and answered in the roll", 2, 2, unavailable, 2},
		{"a 503 sent in the roll, answered once both servers stop", 2, 3, unavailable, 3},
		{"a failure that outlived the kill", 0, 1, sample{}, 1},
		{"a failure after the kill's step", 2, 3, sample{}, 2},
		{"a 503 answered after the drill", 3, 4, unavailable, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.s
			s.step, s.endStep = tt.sent, tt.answered
			if got := r.heldAgainst(s, outcome(s)); got != tt.want {
				t.Errorf("heldAgainst = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestWritesAsWanted(t *testing.T) {
	failed := errors.New("connection refused")
	tests := []struct {
		got  []error
		want []bool
		ok   bool
	}{
		{[]error{failed, nil}, []bool{false, true}, true},
		{[]error{nil, nil}, []bool{false, true}, false},
		{[]error{failed, failed}, []bool{false, true}, false},
		{[]error{failed}, []bool{false, true}, false}, // a write the step did not make
		{[]error{nil}, []bool{true}, true},
	}
	for _, tt := range tests {
		if got := writesAsWanted(tt.got, tt.want); got != tt.ok {
			t.Errorf("writesAsWanted(%v, %v) = %v, want %v", tt.got, tt.want, got, tt.ok)
		}
	}
}
