package fleet

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// redisCheckInterval is how often a cdnapi process pings the rate-limit
// Redis (ratelimit.DefaultRedisCheckInterval): after an outage, each
// process uses Redis again within one interval of its answering.
const redisCheckInterval = time.Second

// rateRemaining reads the r= of a RateLimit header ("default";r=3;t=1):
// the tokens left in the client's bucket. ok is false without the header,
// which cdnapi omits when the limiter did not decide (Redis away).
func rateRemaining(header string) (remaining int, ok bool) {
	for _, p := range strings.Split(header, ";") {
		if v, found := strings.CutPrefix(strings.TrimSpace(p), "r="); found {
			n, err := strconv.Atoi(v)
			return n, err == nil
		}
	}
	return 0, false
}

// bucketRate is the rate at which one client's bucket let requests
// through, from its answers decided by the limiter in one step, in the
// order they were sent, and the give of that figure: what the timing of
// the answers cannot tell, per second.
//
// A token bucket lets through rate x T, plus the tokens it held at the
// start, less those it holds at the end. RateLimit's r= gives what it held
// after each request, so a fresh bucket (a new Redis, the drill's start)
// needs no guess of how long its burst lasts: the estimate is what was
// allowed after a first answer, less that answer's r=, plus a last one's,
// over the time between the two, by the times the requests were sent.
//
// The limiter decided each request somewhere between its sending and its
// answer. So the two answers chosen as the ends are the calmest near each
// end (calmest), and the give counts what they leave open: the allowed
// requests in flight with them, which may have been decided on either
// side, and their own latency, which blurs the time between them. On an
// idle machine it is a small fraction of a request per second.
func bucketRate(decided []sample, limit float64) (rate, give float64, ok bool) {
	if len(decided) < 2 {
		return 0, 0, false
	}
	span := decided[len(decided)-1].at.Sub(decided[0].at)
	if span < time.Second { // too short to tell a rate from a burst
		return 0, 0, false
	}
	i := calmest(decided, limit, decided[0].at, decided[0].at.Add(span/3), false)
	j := calmest(decided, limit, decided[len(decided)-1].at.Add(-span/3), decided[len(decided)-1].at, true)
	first, last := decided[i], decided[j]
	secs := last.at.Sub(first.at).Seconds()
	allowed := 0
	for _, s := range decided[i+1 : j+1] {
		if outcome(s) != "limited" {
			allowed++
		}
	}
	rate = float64(allowed-first.remaining+last.remaining) / secs
	give = (blur(decided, i, limit) + blur(decided, j, limit)) / secs
	return rate, give, true
}

// blur is what answer i leaves open as an end of the count: the allowed
// answers in flight with it, and the requests its bucket lets through
// during its own latency.
func blur(decided []sample, i int, limit float64) float64 {
	a := decided[i]
	n := 0.0
	for k, b := range decided {
		if k != i && outcome(b) != "limited" && b.at.Before(a.at.Add(a.latency)) && a.at.Before(b.at.Add(b.latency)) {
			n++
		}
	}
	return n + limit*a.latency.Seconds()
}

// calmest returns the index of the answer sent between from and to with
// the least blur: the earliest of equals, or the latest if latest.
func calmest(decided []sample, limit float64, from, to time.Time, latest bool) int {
	best, bestBlur := -1, 0.0
	for k, s := range decided {
		if s.at.Before(from) || s.at.After(to) {
			continue
		}
		if b := blur(decided, k, limit); best < 0 || b < bestBlur || (latest && b == bestBlur) {
			best, bestBlur = k, b
		}
	}
	return best
}

// hotRate sums bucketRate over the clients over their limit, and counts
// those it could measure.
func hotRate(byClient map[string][]sample, limit float64) (rate, give float64, clients int) {
	for _, decided := range byClient {
		if r, g, ok := bucketRate(decided, limit); ok {
			rate, give = rate+r, give+g
			clients++
		}
	}
	return rate, give, clients
}

// checkLimit checks that the clients over their limit got what one process
// would allow them, fleet-wide, while Redis holds the buckets; and that the
// limit is off while Redis is away.
func (r *Report) checkLimit(st stepReport) {
	if r.fleet.Limits != "redis" || r.fleet.RateLimit == 0 {
		if st.name == r.steps[0].name {
			r.checks = append(r.checks, checkResult{name: "fleet-wide limit", skipped: true,
				detail: "limits are " + limitsName(r.fleet.Limits) + ": this cdnapi has no --rate-limit-redis"})
		}
		return
	}
	if st.redisDown {
		r.add(st.name+": limit off while Redis is away", st.hotLimitedLate == 0,
			"%d answered 429 after the first second", st.hotLimitedLate)
		return
	}
	// What the clients were let through: what their buckets let through,
	// and what a process served without asking Redis (it did not answer
	// within --rate-limit-redis-timeout, or the process had yet to find it
	// back), from limitBackBy on.
	if st.hotClients == 0 {
		r.add(st.name+": fleet-wide limit within 10%", false, "no client over its limit had two answers decided by the limiter a second apart")
		return
	}
	want := float64(r.fleet.RateLimit * st.hotClients)
	from := ""
	if back := st.limitBackBy.Sub(st.start); back > 0 {
		from = fmt.Sprintf(" from +%.1fs (Redis answered, and a ping interval)", back.Seconds())
	}
	r.add(st.name+": fleet-wide limit within 10%", math.Abs(st.hotRate-want) <= want/10+st.hotGive,
		"%d clients over the limit were let through %.1f/s%s (%.1f/s served without it; ± %.1f the timing cannot tell), want %.0f/s (one process's limit)",
		st.hotClients, st.hotRate, from, st.hotUnlimitedRate, st.hotGive, want)
}
