package health

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/cdnapi/cdnapi"
)

// Regions are measured like the components with a health URL: each round
// probes every configured edge (probeURL, within PingTimeout, slower than
// SlowThreshold is degraded_performance), concurrently with the rest of the
// round. A region's probed status is damped by the rule of the incidents
// (see DampWindow), so that a flapping probe does not flap the region:
//
//   - an operational region turns to the worst status of its last
//     DampWindow probes once OpenAfter of them failed or were slow: an edge
//     that stops answering reads major_outage at its second failed round;
//   - a region that is not operational follows the worst of its last
//     DampWindow probes, and is operational again after DampWindow
//     operational probes in a row.
//
// The status served for a region is the operator's while one is in force
// (see OperatorStatus), else the damped probed status; a region without a
// probe shows what the store holds.

// RegionProbe is the health URL of one point of presence.
type RegionProbe struct {
	Code string // the region's code, e.g. FRA1
	URL  string // probed with HTTP GET each round
}

// RegionIncidentPrefix starts the incident component of a probed region:
// "Region FRA1". A code alone would read as a component on the status page.
const RegionIncidentPrefix = "Region "

// regionLabelPrefix starts the component label of a region's probe metrics:
// cdnapi_probe_duration_seconds{component="region:FRA1"}.
const regionLabelPrefix = "region:"

// regionState is what the evaluator knows of one probed region. It is
// guarded by Evaluator.mu.
type regionState struct {
	RegionProbe
	window []cdnapi.Status // the last DampWindow probe results, oldest first
	damped cdnapi.Status   // the damped probed status; "" before the first round
	// effective is the status last recorded as this region's (the
	// operator's or the damped probe's); "" before the first round in
	// which the store knew the region.
	effective cdnapi.Status
	missing   bool // the last read of the store did not have the region; logged once
}

// dampRegion returns the damped status of a region given its last probes
// and was, the status dampRegion returned last time ("" at first).
func dampRegion(was cdnapi.Status, window []cdnapi.Status) cdnapi.Status {
	bad, worst := 0, cdnapi.StatusOperational
	for _, s := range window {
		if s != cdnapi.StatusOperational {
			bad++
			worst = cdnapi.Worst(worst, s)
		}
	}
	down := was != "" && was != cdnapi.StatusOperational
	switch {
	case !down && bad >= OpenAfter:
		return worst
	case !down:
		return cdnapi.StatusOperational
	case bad == 0 && len(window) >= DampWindow:
		return cdnapi.StatusOperational
	case bad == 0:
		return was // cannot happen: opening takes OpenAfter failures
	}
	return worst
}

// OperatorStatus returns the status an operator set for r and whether it is
// in force: any status other than operational (set with regions set-status
// or by ingest) whose end, if any, has not passed, or operational set with
// an end still ahead (regions set-status CODE operational --until 1h), which
// is how an operator holds a region operational over a failing probe. The
// stores have already applied the end (Region.WithStatusUntil): a status
// past its end reads operational with Expired set.
func OperatorStatus(r cdnapi.Region) (cdnapi.Status, bool) {
	switch {
	case r.Status != cdnapi.StatusOperational:
		return r.Status, true
	case !r.Until.IsZero() && r.Expired == "":
		return r.Status, true
	}
	return "", false
}

// EffectiveRegion returns r with the status it is served with, given its
// damped probed status (ok false when it is not probed, or not yet): the
// operator's while one is in force, else the probe's.
func EffectiveRegion(r cdnapi.Region, probed cdnapi.Status, ok bool) cdnapi.Region {
	if !ok {
		return r
	}
	if _, operator := OperatorStatus(r); !operator {
		r.Status = probed
	}
	return r
}

// ProbedRegions returns inner with the probed regions' statuses applied as
// EffectiveRegion says, from memory: the reads of the store are inner's, no
// more. With no region probes configured it returns inner itself.
func (e *Evaluator) ProbedRegions(inner cdnapi.RegionReader) cdnapi.RegionReader {
	if len(e.regions) == 0 {
		return inner
	}
	return probedRegions{inner: inner, e: e}
}

// RegionsVersion returns a number that changes whenever the damped probed
// status of a region changes, and only then. Caches of what ProbedRegions
// returns key on it, so that no cache hides a change of a probed region.
func (e *Evaluator) RegionsVersion() uint64 { return e.regionsVersion.Load() }

type probedRegions struct {
	inner cdnapi.RegionReader
	e     *Evaluator
}

func (p probedRegions) ListRegions(ctx context.Context) ([]cdnapi.Region, error) {
	regions, err := p.inner.ListRegions(ctx)
	if err != nil {
		return nil, err
	}
	probed := *p.e.probed.Load()
	for i, r := range regions {
		s, ok := probed[r.Code]
		regions[i] = EffectiveRegion(r, s, ok)
	}
	return regions, nil
}

func (p probedRegions) Region(ctx context.Context, code string) (cdnapi.Region, error) {
	r, err := p.inner.Region(ctx, code)
	if err != nil {
		return r, err
	}
	s, ok := (*p.e.probed.Load())[code]
	return EffectiveRegion(r, s, ok), nil
}

// regionRound is what one round measured of the regions.
type regionRound struct {
	results []measurement   // in the order of Evaluator.regions
	stored  []cdnapi.Region // the store's regions; nil when not read
	err     error           // why the store's regions could not be read
}

// probeRegions starts the round's probe of every region on wg, and the read
// of the store's regions when Config.Regions is set.
func (e *Evaluator) probeRegions(ctx context.Context, goFn func(func()), rr *regionRound) {
	rr.results = make([]measurement, len(e.regions))
	for i, r := range e.regions {
		goFn(func() { rr.results[i] = e.probeURL(ctx, r.URL) })
	}
	if e.cfg.Regions != nil {
		goFn(func() {
			// A read cut off by the timeout may still finish later: it
			// writes only its own variable.
			var stored []cdnapi.Region
			_, err := e.within(ctx, func(ctx context.Context) error {
				var err error
				stored, err = e.cfg.Regions.ListRegions(ctx)
				return err
			})
			if err == nil {
				rr.stored = stored
			}
			rr.err = err
		})
	}
}

// regionsLocked applies a round's measurements of the regions at now:
// damps them, publishes the probed statuses (and a new RegionsVersion when
// one changed), and queues the history of the regions the store knows.
// e.mu must be held.
func (e *Evaluator) regionsLocked(rr regionRound, now time.Time) {
	if e.cfg.Regions != nil && rr.err == nil {
		e.storedRegions = map[string]cdnapi.Region{}
		for _, r := range rr.stored {
			e.storedRegions[r.Code] = r
		}
		e.storedKnown = true
		e.operatorRegionsLocked(rr.stored, now)
	}
	if len(e.regions) == 0 {
		return
	}
	// When the read fails, the regions last read stay in force, as the
	// component overrides do; storage reports the failure itself.

	probed := maps.Clone(*e.probed.Load())
	changed := false
	for i, r := range e.regions {
		m := rr.results[i]
		r.window = append(r.window, m.status)
		if len(r.window) > DampWindow {
			r.window = r.window[1:]
		}
		d := dampRegion(r.damped, r.window)
		if d != r.damped {
			attrs := []any{"region", r.Code, "status", d}
			if r.damped != "" {
				attrs = append(attrs, "previous", r.damped)
			}
			// The URL is not logged: its query may hold a token.
			e.cfg.Logger.Info("health: probed region status changed", attrs...)
			r.damped, probed[r.Code] = d, d
			changed = true
		}
		e.regionHistoryLocked(r, m.status, now)
	}
	if changed {
		e.probed.Store(&probed)
		e.regionsVersion.Add(1)
	}
}

// regionHistoryLocked records the history of one probed region after a
// round in which its probe said status: a change of the status it is
// served with, when the probe made it (the store records the operators'
// changes itself), and its incidents, damped as the components' are. A
// region the store does not know has no history: it may be a typo, or be
// ingested later. e.mu must be held.
func (e *Evaluator) regionHistoryLocked(r *regionState, status cdnapi.Status, now time.Time) {
	// Without Config.Regions there is no operator status to know of, and
	// every probed region is taken to exist.
	stored, ok := cdnapi.Region{Code: r.Code, Status: cdnapi.StatusOperational}, true
	if e.cfg.Regions != nil {
		if !e.storedKnown {
			return
		}
		stored, ok = e.storedRegions[r.Code]
	}
	if !ok {
		if !r.missing {
			r.missing = true
			e.cfg.Logger.Warn("health: --region-probe names a region the store does not have; it is probed, and shown once ingested",
				"region", r.Code)
		}
		return
	}
	if r.missing {
		r.missing = false
		e.cfg.Logger.Info("health: probed region is in the store now", "region", r.Code)
	}
	op, operator := OperatorStatus(stored)
	effective := r.damped
	if operator {
		effective = op
	}
	if effective != r.effective {
		if !operator {
			e.queueLocked(historyOp{change: &cdnapi.StatusChange{Kind: cdnapi.SubjectRegion, Subject: r.Code,
				Status: effective, Source: cdnapi.SourceProbe, At: now}})
		}
		r.effective = effective
	}

	name := RegionIncidentPrefix + r.Code
	d := e.dampers[name]
	if d == nil {
		d = &damper{}
		e.dampers[name] = d
	}
	o := observation{status: status, at: now}
	if operator {
		o = observation{status: op, at: now, operator: true}
	}
	if u, ok := d.observe(name, o); ok {
		e.queueLocked(historyOp{update: &u})
	}
}

// operatorRegionsLocked records the incidents of the regions that are not
// probed, as read from the store: a status an operator set (regions
// set-status, or ingest) opens, raises or resolves the region's incident at
// once, as an operator's status of a component does, so that the status
// page and the incidents list show a region in trouble whether or not its
// edge is probed. The store records the status changes themselves. e.mu
// must be held.
func (e *Evaluator) operatorRegionsLocked(stored []cdnapi.Region, now time.Time) {
	for _, r := range stored {
		if slices.ContainsFunc(e.regions, func(p *regionState) bool { return p.Code == r.Code }) {
			continue // regionHistoryLocked records it
		}
		status, operator := OperatorStatus(r)
		if !operator {
			status = cdnapi.StatusOperational
		}
		name := RegionIncidentPrefix + r.Code
		d := e.dampers[name]
		if d == nil {
			d = &damper{}
			e.dampers[name] = d
		}
		// Operational is an operator's observation too: it resolves at
		// once, and at the first round it resolves an incident left open
		// by an earlier process.
		if u, ok := d.observe(name, observation{status: status, at: now, operator: true}); ok {
			e.queueLocked(historyOp{update: &u})
		}
	}
}

// observeRegions records the round's region probes in the metrics, after
// their statuses are published: a scrape that counts a region's failures
// never sees an API that has not shown them yet.
func (e *Evaluator) observeRegions(rr regionRound) {
	for i, r := range e.regions {
		e.cfg.Metrics.observe(regionLabelPrefix+r.Code, rr.results[i])
	}
}
