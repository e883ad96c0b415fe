package fleet

import (
	"cmp"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is what a drill saw: per step, every answer by status, latency,
// and the checks of the issue.
type Report struct {
	fleet   *Fleet
	rate    int
	steps   []stepReport
	cross   map[[2]string]int // cursor pages by (minted by, served by)
	walks   []walkResult
	dropped int64
	checks  []checkResult
}

// stepReport is one step's share of the load.
type stepReport struct {
	step
	start, end time.Time
	notes      []string
	writes     []error
	inflight   int64 // at the kill of step 1

	requests                         int
	ok, limited, unavailable, failed int // by the step each request was sent in
	byStatus                         map[string]int
	badFailed, bad503                int // failures and 503s held against the step (heldAgainst)
	underLimited                     int // 429s of clients under their limit
	p50, p99                         time.Duration

	// The clients over their limit (limit.go).
	hotRate          float64        // what they were let through, per second, from limitBackBy
	hotUnlimitedRate float64        // the part of hotRate served without the limit
	hotGive          float64        // what the answers' timing cannot tell of hotRate
	hotClients       int            // how many of them hotRate measured
	hotUnlimited     int            // answers served without the limit (no RateLimit header)
	hotUnlimitedLate int            // those sent from limitBackBy on
	limitBackBy      time.Time      // Redis is up and every process has found it
	spilled          map[string]int // answers held against a later step, by label
	hotLimitedLate   int            // redisDown: 429s after the first second

	statusPolls, statusNot200          int
	storage, api                       map[string]int // component statuses seen by the status polls
	storageNotOutLate, storagePollLate int            // expectOutage: polls from 3 s in, and those not showing the outage
	storageOut                         int            // polls showing Storage major_outage
	odd                                []sample       // the first answers that a check counts against the step

	// What collect gathers for finish.
	latencies  []time.Duration     // of the answers sent in the step
	hotDecided map[string][]sample // per hot client, its answers decided by the limit from limitBackBy on
}

type checkResult struct {
	name    string
	ok      bool
	skipped bool // could not run on this fleet: neither passed nor failed
	detail  string
}

// outcome classes an answer: ok (200), limited (429), unavailable (the
// contract's 503 storage_unavailable with Retry-After) or failed (anything
// else: no answer, a 5xx of haproxy, a 503 without Retry-After...).
func outcome(s sample) string {
	switch {
	case s.status == http.StatusOK:
		return "ok"
	case s.status == http.StatusTooManyRequests && s.code == "rate_limited":
		return "limited"
	case s.status == http.StatusServiceUnavailable && s.code == "storage_unavailable" && s.retryAfter:
		return "unavailable"
	}
	return "failed"
}

func label(s sample) string {
	if s.status == 0 {
		return "no answer"
	}
	if s.code != "" {
		return fmt.Sprintf("%d %s", s.status, s.code)
	}
	return fmt.Sprint(s.status)
}

// collect sorts the load's samples into the steps and runs the checks.
func (r *Report) collect(l *load) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r.walks, r.dropped, r.cross = l.walks, l.dropped.Load(), map[[2]string]int{}
	for i := range r.steps {
		r.steps[i].begin()
	}
	// The samples are in the order they were answered; the rates need the
	// order they were sent.
	slices.SortStableFunc(l.samples, func(a, b sample) int { return a.at.Compare(b.at) })
	for _, s := range l.samples {
		switch {
		case s.step >= len(r.steps):
		case s.kind == kindStatus:
			r.steps[s.step].addPoll(s)
		default:
			r.addAnswer(s)
		}
	}
	for i := range r.steps {
		r.steps[i].finish(float64(r.fleet.RateLimit))
	}
	r.check()
}

// begin readies st for collect.
func (st *stepReport) begin() {
	st.byStatus, st.storage, st.api, st.spilled = map[string]int{}, map[string]int{}, map[string]int{}, map[string]int{}
	st.hotDecided = map[string][]sample{}
	if st.limitBackBy.IsZero() {
		st.limitBackBy = st.start
	}
}

// addPoll counts a poll of the status document sent in st.
func (st *stepReport) addPoll(s sample) {
	st.statusPolls++
	if s.status != http.StatusOK {
		st.statusNot200++
	}
	st.storage[s.storage]++
	st.api[s.apiStatus]++
	if s.storage == "major_outage" {
		st.storageOut++
	}
	if st.expectOutage && s.at.After(st.start.Add(3*time.Second)) {
		st.storagePollLate++
		if s.storage != "major_outage" {
			st.storageNotOutLate++
		}
	}
}

// addAnswer counts an answer of the load: in the step it was sent in, and
// against the step whose checks hold it (heldAgainst).
func (r *Report) addAnswer(s sample) {
	st := &r.steps[s.step]
	o := outcome(s)
	st.count(s, o)
	r.hold(s, o)
	switch {
	case s.kind == kindHot:
		st.addHot(s, o)
	case o == "limited":
		st.underLimited++
	}
	if s.kind == kindWalk && s.mintedBy != "" && s.status == http.StatusOK {
		r.cross[[2]string{s.mintedBy, s.servedBy}]++
	}
}

// count counts answer s, of outcome o, in the step it was sent in.
func (st *stepReport) count(s sample, o string) {
	st.requests++
	st.byStatus[label(s)]++
	st.latencies = append(st.latencies, s.latency)
	switch o {
	case "ok":
		st.ok++
	case "limited":
		st.limited++
	case "unavailable":
		st.unavailable++
	default:
		st.failed++
	}
}

// hold counts answer s, of outcome o, against the step whose checks hold
// it, and keeps the first few that count against that step.
func (r *Report) hold(s sample, o string) {
	held := &r.steps[r.heldAgainst(s, o)]
	if held != &r.steps[s.step] {
		r.steps[s.step].spilled[label(s)]++
	}
	odd := false
	switch {
	case o == "failed":
		held.badFailed++
		odd = true
	case o == "unavailable" && !held.storageDown:
		held.bad503++
		odd = true
	case o == "limited" && s.kind != kindHot:
		odd = true
	}
	if odd && len(held.odd) < 5 {
		held.odd = append(held.odd, s)
	}
}

// addHot counts answer s, of outcome o, to a client over its limit.
func (st *stepReport) addHot(s sample, o string) {
	// The rate counts from limitBackBy: while some processes still serve
	// without the limit, the bucket gets less than the client sends and
	// may sit full, which no formula can see.
	inForce := !s.at.Before(st.limitBackBy)
	switch {
	case s.decided && inForce:
		st.hotDecided[s.client] = append(st.hotDecided[s.client], s)
	case !s.decided && o != "failed": // served, with the limit off
		st.hotUnlimited++
		if inForce {
			st.hotUnlimitedLate++
		}
	}
	if st.redisDown && o == "limited" && s.at.After(st.start.Add(time.Second)) {
		st.hotLimitedLate++
	}
}

// finish works out st's latencies and the rate its clients over the limit
// were let through, limit a second each.
func (st *stepReport) finish(limit float64) {
	slices.Sort(st.latencies)
	st.p50, st.p99 = percentile(st.latencies, 50), percentile(st.latencies, 99)
	st.hotRate, st.hotGive, st.hotClients = hotRate(st.hotDecided, limit)
	if secs := st.end.Sub(st.limitBackBy).Seconds(); secs > 0 {
		st.hotUnlimitedRate = float64(st.hotUnlimitedLate) / secs
		st.hotRate += st.hotUnlimitedRate
	}
}

func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[(len(sorted)-1)*p/100]
}

// Err returns an error naming the failed checks, or nil.
func (r *Report) Err() error {
	var failed []string
	for _, c := range r.checks {
		if !c.ok && !c.skipped {
			failed = append(failed, c.name)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("drill: %d checks failed: %s", len(failed), strings.Join(failed, "; "))
	}
	return nil
}

// Print writes the table per step, the notes and the checks.
func (r *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "load: %d req/s through haproxy (3/10 from %d clients over a limit of %d/s, burst %d; limits: %s)\n\n",
		r.rate, hotClients, r.fleet.RateLimit, r.fleet.RateBurst, limitsName(r.fleet.Limits))
	r.printTable(w)
	fmt.Fprintln(w)
	for _, st := range r.steps {
		r.printNotes(w, st)
	}
	fmt.Fprintf(w, "\ncursor pages by (made by -> served by):")
	for _, k := range sortedKeys(r.cross) {
		fmt.Fprintf(w, " %s->%s %d", k[0], k[1], r.cross[k])
	}
	// Not a check of the fleet: a machine too busy to answer in time makes
	// the load generator skip requests, which the table shows as fewer.
	fmt.Fprintf(w, "\nwalks completed: %d; requests not sent (%d in flight already): %d\n\n", len(r.walks), maxInflight, r.dropped)
	for _, c := range r.checks {
		mark := "PASS"
		switch {
		case c.skipped:
			mark = "SKIP"
		case !c.ok:
			mark = "FAIL"
		}
		fmt.Fprintf(w, "%s  %s: %s\n", mark, c.name, c.detail)
	}
}

// printTable writes a line per step: its answers by outcome, latencies,
// the rate of the clients over their limit, and the status polls.
func (r *Report) printTable(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "step\tsecs\treqs\t200\t429\t503 s_u\tfailed\tp50 ms\tp99 ms\thot ok/s\tunlimited\tstatus polls\t")
	for _, st := range r.steps {
		hot := "-"
		if st.hotClients > 0 {
			hot = fmt.Sprintf("%.1f±%.1f", st.hotRate, st.hotGive)
		}
		fmt.Fprintf(tw, "%-28s\t%.1f\t%d\t%d\t%d\t%d\t%d\t%.1f\t%.1f\t%s\t%d\t%d (%d not 200)\t\n", st.name,
			st.end.Sub(st.start).Seconds(), st.requests, st.ok, st.limited, st.unavailable, st.failed,
			ms(st.p50), ms(st.p99), hot, st.hotUnlimited, st.statusPolls, st.statusNot200)
	}
	tw.Flush()
}

// printNotes writes what step st saw: its answers by status, the statuses
// its polls saw, the drill's notes, and the answers held against it.
func (r *Report) printNotes(w io.Writer, st stepReport) {
	var parts []string
	for _, k := range sortedKeys(st.byStatus) {
		parts = append(parts, fmt.Sprintf("%s: %d", k, st.byStatus[k]))
	}
	fmt.Fprintf(w, "%s: %s; in status: Storage %s; API %s\n", st.name, strings.Join(parts, ", "),
		counts(st.storage), counts(st.api))
	for _, n := range st.notes {
		fmt.Fprintf(w, "    %s\n", n)
	}
	if len(st.spilled) > 0 {
		fmt.Fprintf(w, "    answered once the next step had begun, and held against it: %s\n", counts(st.spilled))
	}
	for _, s := range st.odd {
		during := ""
		if s.step != s.endStep && s.endStep < len(r.steps) {
			during = ", answered during " + r.steps[s.endStep].name
		}
		fmt.Fprintf(w, "    held against it: %s, sent in %s at +%.2fs, from %s, in %.0f ms%s\n", label(s),
			r.steps[s.step].name, s.at.Sub(r.steps[s.step].start).Seconds(), cmp.Or(s.servedBy, "?"), ms(s.latency), during)
	}
}

// counts prints "value n, value n" in the order of the values.
func counts(m map[string]int) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func limitsName(l string) string {
	return map[string]string{"": "none", "memory": "per process, in memory", "redis": "fleet-wide, in Redis"}[l]
}

func sortedKeys[K interface{ ~string | ~[2]string }, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b K) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
	return keys
}
