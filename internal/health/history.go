package health

import (
	"context"
	"time"

	"github.com/cdnapi/cdnapi"
)

// History is where an Evaluator records the status history;
// cdnapi.StatusHistory satisfies it.
type History interface {
	RecordStatusChange(ctx context.Context, c cdnapi.StatusChange) error
	UpdateIncident(ctx context.Context, u cdnapi.IncidentUpdate) error
}

// Flap damping. Every change of a published status is recorded as it
// happens, but incidents follow a damped view of the probes:
//
//   - an incident opens when at least OpenAfter of the last DampWindow
//     rounds were not operational; it starts at the first of those rounds;
//   - it resolves once DampWindow rounds in a row were operational, at the
//     first of them.
//
// So one failed probe between successes opens nothing, and a component that
// fails every other round has one incident, not one per failure. A status an
// operator set is no measurement: it opens, raises or resolves an incident
// at once. The API's maintenance while its process drains for shutdown is
// left out: it is one process leaving, not the service.
const (
	DampWindow = 3
	OpenAfter  = 2
)

// maxPending bounds the history an Evaluator keeps in memory while the
// store cannot take it; past that, the oldest is dropped.
const maxPending = 10_000

// observation is the status of a component after one round.
type observation struct {
	status   cdnapi.Status
	at       time.Time
	operator bool   // an operator override set the status
	message  string // the override's message
	planned  bool   // a status by plan, not a fault: the API draining, a component not deployed
}

// damper turns one component's observations into incident updates, as the
// comment on DampWindow says.
type damper struct {
	window []observation // the last DampWindow observations, oldest first
	open   bool          // an incident is open, as far as this damper knows
	known  bool          // open says what the store was last told
	sent   cdnapi.Status // the worst status sent for the open incident
	msg    string        // the last operator message sent
}

// observe adds o and returns the incident update it calls for, if any.
func (d *damper) observe(component string, o observation) (cdnapi.IncidentUpdate, bool) {
	if o.planned {
		o.status = cdnapi.StatusOperational // no incident
	}
	d.window = append(d.window, o)
	if len(d.window) > DampWindow {
		d.window = d.window[1:]
	}
	update := func(s cdnapi.Status, msg string, at time.Time) (cdnapi.IncidentUpdate, bool) {
		wasOpen := d.open && d.known
		d.known = true
		d.open = s != cdnapi.StatusOperational
		switch {
		case d.open && wasOpen:
			d.sent, d.msg = cdnapi.Worst(d.sent, s), msg
		case d.open:
			d.sent, d.msg = s, msg
		default:
			d.sent, d.msg = cdnapi.StatusOperational, ""
		}
		return cdnapi.IncidentUpdate{Component: component, Status: s, Message: msg, At: at}, true
	}
	if o.operator {
		if d.known && d.open == (o.status != cdnapi.StatusOperational) &&
			cdnapi.Worst(d.sent, o.status) == d.sent && o.message == d.msg {
			return cdnapi.IncidentUpdate{}, false // nothing new
		}
		return update(o.status, o.message, o.at)
	}

	var bad int
	var worst cdnapi.Status = cdnapi.StatusOperational
	var firstBad time.Time
	for _, w := range d.window {
		if w.status != cdnapi.StatusOperational {
			if bad == 0 {
				firstBad = w.at
			}
			bad++
			worst = cdnapi.Worst(worst, w.status)
		}
	}
	switch {
	case d.open && d.known && o.status != cdnapi.StatusOperational:
		if cdnapi.Worst(d.sent, o.status) != d.sent {
			return update(o.status, "", o.at) // worse than before
		}
	case bad >= OpenAfter && (!d.open || !d.known):
		return update(worst, "", firstBad)
	case bad == 0 && len(d.window) == DampWindow && (d.open || !d.known):
		return update(cdnapi.StatusOperational, "", d.window[0].at)
	}
	return cdnapi.IncidentUpdate{}, false
}

// historyOp is one write of history waiting for the store: a status change
// or an incident update.
type historyOp struct {
	change *cdnapi.StatusChange
	update *cdnapi.IncidentUpdate
}

// queueLocked adds op to the writes waiting for the store. e.mu must be
// held.
func (e *Evaluator) queueLocked(op historyOp) {
	if e.cfg.History == nil {
		return
	}
	if len(e.pending) >= maxPending {
		e.pending = e.pending[1:]
		if !e.droppedHistory {
			e.droppedHistory = true
			e.cfg.Logger.Warn("health: the store has not taken the status history for long; dropping the oldest")
		}
	}
	e.pending = append(e.pending, op)
}

// observeLocked feeds the round's observations to the dampers and queues
// the incident updates they call for. e.mu must be held.
func (e *Evaluator) observeLocked() {
	for _, name := range cdnapi.Components {
		d := e.dampers[name]
		if d == nil {
			d = &damper{}
			e.dampers[name] = d
		}
		if u, ok := d.observe(name, e.observed[name]); ok {
			e.queueLocked(historyOp{update: &u})
		}
	}
}

// flush writes the waiting history to the store, in order, each write
// within PingTimeout. It stops at the first failure and keeps the rest for
// the next round: while storage is down, history waits in memory, with its
// times, and the live status does not wait for it.
func (e *Evaluator) flush(ctx context.Context) {
	if e.cfg.History == nil {
		return
	}
	e.mu.Lock()
	ops := e.pending
	e.mu.Unlock()
	done := 0
	for _, op := range ops {
		_, err := e.within(ctx, func(ctx context.Context) error {
			if op.change != nil {
				return e.cfg.History.RecordStatusChange(ctx, *op.change)
			}
			return e.cfg.History.UpdateIncident(ctx, *op.update)
		})
		if err != nil {
			break
		}
		done++
	}
	e.mu.Lock()
	// Others may have been queued meanwhile (SetDraining); drop only what
	// was written.
	e.pending = e.pending[min(done, len(e.pending)):]
	if done == len(ops) {
		e.droppedHistory = false
	}
	e.mu.Unlock()
}
