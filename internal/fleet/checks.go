package fleet

import (
	"errors"
	"fmt"
	"strings"
)

// check runs the assertions over the collected steps.
func (r *Report) check() {
	for _, st := range r.steps {
		r.checkStep(st)
	}
	under := 0
	for _, st := range r.steps {
		under += st.underLimited
	}
	r.add("clients under their limit are never limited", under == 0, "%d answered 429", under)
	r.checkCursors()
}

// add records the result of a check.
func (r *Report) add(name string, ok bool, format string, args ...any) {
	r.checks = append(r.checks, checkResult{name: name, ok: ok, detail: fmt.Sprintf(format, args...)})
}

// checkStep checks what the answers of one step must be, as the step says.
func (r *Report) checkStep(st stepReport) {
	// A kill -9 may cost the requests in flight on the killed process
	// (haproxy retries most of them); nothing else may fail. The counts
	// are of the answers held against the step (heldAgainst).
	if st.inflight >= 0 {
		r.add(st.name+": failures within the requests in flight", int64(st.badFailed) <= st.inflight,
			"%d failed, %d were in flight at the kill", st.badFailed, st.inflight)
	} else {
		r.add(st.name+": no failed request", st.badFailed == 0, "%d failed", st.badFailed)
	}
	if st.storageDown {
		r.add(st.name+": status answers 200", st.statusNot200 == 0, "%d of %d polls not 200", st.statusNot200, st.statusPolls)
	} else {
		r.add(st.name+": no 503 while storage is up", st.bad503 == 0, "%d answered 503 storage_unavailable", st.bad503)
	}
	if st.expectOutage {
		r.add(st.name+": status says Storage is out", st.storagePollLate > 0 && st.storageNotOutLate == 0,
			"%d of %d polls from 3 s in did not show major_outage", st.storageNotOutLate, st.storagePollLate)
	}
	r.checkLimit(st)
	if st.storageUp {
		r.add(st.name+": status never says Storage is out", st.storageOut == 0,
			"%d of %d polls showed major_outage", st.storageOut, st.statusPolls)
	}
	if len(st.step.writes) > 0 {
		r.add(st.name+": writes "+writesWanted(st.step.writes), writesAsWanted(st.writes, st.step.writes),
			"%d writes: %v", len(st.writes), errors.Join(st.writes...))
	}
}

// checkCursors checks the cursor walks: a cursor made by any process pages
// on every other, and every walk returns every file once.
func (r *Report) checkCursors() {
	var missing []string
	for _, a := range Servers {
		for _, b := range Servers {
			if a != b && r.cross[[2]string{a, b}] == 0 {
				missing = append(missing, a+"->"+b)
			}
		}
	}
	r.add("a cursor from one process pages on every other", len(missing) == 0, "pairs never seen: %v", missing)
	bad := 0
	for _, w := range r.walks {
		if w.repeated > 0 || w.files != r.fleet.Files {
			bad++
		}
	}
	r.add("every cursor walk returns every file once", len(r.walks) > 0 && bad == 0,
		"%d walks completed, %d of them not exactly the %d files", len(r.walks), bad, r.fleet.Files)
}

// writesWanted says what writes must do: "fail", "succeed", "fail, succeed".
func writesWanted(want []bool) string {
	words := make([]string, len(want))
	for i, w := range want {
		words[i] = map[bool]string{true: "succeed", false: "fail"}[w]
	}
	return strings.Join(words, ", ")
}

// writesAsWanted tells whether the writes, in order, did what want says.
func writesAsWanted(got []error, want []bool) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if (got[i] == nil) != want[i] {
			return false
		}
	}
	return true
}

// heldAgainst returns the step whose checks hold answer s, of outcome o.
// An answer belongs to the step it was sent in; but a request still in
// flight when the next step began met that step's change too (one sent as
// the roll ends may be answered 503 by the standby that the next step is
// stopping). Such an answer is held against the first step it spanned that
// permits it, if any: a failure against a step that kills a process, a 503
// against one that stops storage.
func (r *Report) heldAgainst(s sample, o string) int {
	for i := s.step; i <= min(s.endStep, len(r.steps)-1); i++ {
		st := r.steps[i]
		if (o == "failed" && st.inflight >= 0) || (o == "unavailable" && st.storageDown) {
			return i
		}
	}
	return s.step
}
