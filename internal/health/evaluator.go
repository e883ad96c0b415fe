// Package health measures the components of cdnapi and keeps the status
// document that GET /api/v1/status serves.
//
// An Evaluator probes the components in the background and publishes each
// result as an immutable document, so serving the status never waits on the
// database or the network: when storage hangs, the status endpoint still
// answers at once and reports the outage.
package health

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cdnapi/cdnapi"
)

// Store is what the Evaluator needs of the store; cdnapi.Store satisfies it.
type Store interface {
	Ping(ctx context.Context) error
	ComponentOverrides(ctx context.Context) ([]cdnapi.ComponentOverride, error)
}

// The defaults of Config.
const (
	DefaultInterval      = 5 * time.Second
	DefaultPingTimeout   = time.Second
	DefaultSlowThreshold = 250 * time.Millisecond
)

// Config configures an Evaluator. Zero fields take their defaults.
type Config struct {
	Region string // name of the answering region, shown in the document

	Interval time.Duration // time between evaluations; DefaultInterval
	// PingTimeout bounds every probe of a round: the store ping, the read
	// of the operator overrides and each HTTP health check.
	// DefaultPingTimeout.
	PingTimeout time.Duration
	// SlowThreshold is the probe duration above which a component that
	// answers is degraded_performance. DefaultSlowThreshold.
	SlowThreshold time.Duration

	// Upload and VirusScanning measure those components each round,
	// within PingTimeout, as Storage is measured (see judge): Upload
	// reads the upload canary's last round trip (see Canary),
	// VirusScanning asks the scanner (see ScannerProbe). A nil probe means
	// the deployment has no such component: it reads under_maintenance,
	// "not in service here", which claims no measurement, ranks below
	// every fault and opens no incident (see notDeployed).
	Upload, VirusScanning Probe

	// History, when set, receives every change of a component's status and
	// the incident updates of the damped view (see DampWindow). Writes that
	// fail wait in memory for the next round.
	History History

	// APIStatus, when set, reports what this process depends on to serve
	// as configured, such as the Redis of fleet-wide rate limits
	// (degraded_performance while it is unreachable). It is read at every
	// publication, so it must answer from memory. Nil: operational.
	APIStatus func() cdnapi.Status

	// RegionProbes are the health URLs of points of presence, probed each
	// round like the components' (see regions.go). Regions, when set, is
	// where the evaluator reads the stored regions each round, to know
	// which exist and which an operator has put into a status; the history
	// of a region it does not hold is not recorded.
	RegionProbes []RegionProbe
	Regions      cdnapi.RegionReader

	Metrics    *Metrics         // records every probe; nil records nothing
	HTTPClient *http.Client     // client of the HTTP probes; a plain one if nil
	Logger     *slog.Logger     // where status changes are logged; discarded if nil
	Now        func() time.Time // clock of updated_at and override expiry; time.Now if nil
}

// Evaluator measures the components and publishes the status document.
//
// New does not measure anything. Until the first evaluation, Document
// reports every component but the API as major_outage, because nothing
// vouches for them yet; callers run Evaluate once before they serve, and
// then Run in the background.
type Evaluator struct {
	store Store
	cfg   Config
	doc   atomic.Pointer[cdnapi.StatusDocument]
	// next is closed, and replaced, each time a document is published:
	// see Changed.
	next atomic.Pointer[chan struct{}]

	round sync.Mutex // serialises rounds, so that documents are published in order

	mu             sync.Mutex // guards the fields below, never held during I/O
	draining       bool
	measured       map[string]measurement // last measurement per component
	overrides      []cdnapi.ComponentOverride
	overridesStale bool // the last read of the overrides failed
	published      map[string]cdnapi.Status
	observed       map[string]observation // what the last document says, per component
	dampers        map[string]*damper
	pending        []historyOp // history the store has not taken yet
	droppedHistory bool

	regions        []*regionState // one per RegionProbes; the slice and its codes and URLs never change
	storedRegions  map[string]cdnapi.Region
	storedKnown    bool // storedRegions has been read
	probed         atomic.Pointer[map[string]cdnapi.Status]
	regionsVersion atomic.Uint64
}

// measurement is the result of one probe of a component.
type measurement struct {
	status      cdnapi.Status
	took        time.Duration // how long the probe took; zero when nothing was probed
	err         error         // why the component is not operational; logged with a change
	notDeployed bool          // nothing measured, not deployed or not yet: see notDeployed
}

// notDeployed is the measurement of a component the deployment does not
// have (a nil probe). Reading it operational would claim a measurement no
// one made, and major_outage an outage of something that was never in
// service; under_maintenance says "not in service here", ranks below every
// fault, and, like a drain, opens no incident. A component whose first
// measurement is still in flight (ErrNotMeasured) reads the same, for the
// same reason.
var notDeployed = measurement{status: cdnapi.StatusUnderMaintenance, notDeployed: true,
	err: errors.New("not deployed here: nothing is configured to measure it")}

// NotDeployed returns the components that this deployment does not have,
// which read under_maintenance by plan: Upload Service without an upload
// probe, Virus Scanning without a scanner.
func (e *Evaluator) NotDeployed() []string {
	var out []string
	if e.cfg.Upload == nil {
		out = append(out, cdnapi.ComponentUpload)
	}
	if e.cfg.VirusScanning == nil {
		out = append(out, cdnapi.ComponentVirusScanning)
	}
	return out
}

// New returns an Evaluator of store's components. It starts nothing and
// does no I/O.
func New(store Store, cfg Config) *Evaluator {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.PingTimeout <= 0 {
		cfg.PingTimeout = DefaultPingTimeout
	}
	if cfg.SlowThreshold <= 0 {
		cfg.SlowThreshold = DefaultSlowThreshold
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	e := &Evaluator{store: store, cfg: cfg, measured: map[string]measurement{},
		observed: map[string]observation{}, dampers: map[string]*damper{}}
	for _, p := range cfg.RegionProbes {
		e.regions = append(e.regions, &regionState{RegionProbe: p})
	}
	e.probed.Store(&map[string]cdnapi.Status{})
	next := make(chan struct{})
	e.next.Store(&next)
	// The probes' failure counters exist from the start, at 0, so that an
	// alert on their rate needs no `or vector(0)`: the store's always, a
	// upload service's, the scanner's and a region's when configured.
	cfg.Metrics.known(cdnapi.ComponentStorage)
	if cfg.Upload != nil {
		cfg.Metrics.known(cdnapi.ComponentUpload)
	}
	if cfg.VirusScanning != nil {
		cfg.Metrics.known(cdnapi.ComponentVirusScanning)
	}
	for _, p := range cfg.RegionProbes {
		cfg.Metrics.known(regionLabelPrefix + p.Code)
	}
	for _, name := range cdnapi.Components {
		if name != cdnapi.ComponentAPI {
			e.measured[name] = measurement{status: cdnapi.StatusMajorOutage}
		}
	}
	e.mu.Lock()
	e.publishLocked(false)
	e.mu.Unlock()
	return e
}

// Run evaluates at once and then every Interval until ctx ends.
func (e *Evaluator) Run(ctx context.Context) {
	t := time.NewTicker(e.cfg.Interval)
	defer t.Stop()
	for {
		e.Evaluate(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Evaluate runs one round: it probes every component and region
// concurrently, each within PingTimeout, publishes the resulting document and returns it. If
// ctx ends during the round, nothing is published, since probes cut short
// by the caller say nothing about the components.
func (e *Evaluator) Evaluate(ctx context.Context) cdnapi.StatusDocument {
	e.round.Lock()
	defer e.round.Unlock()

	var (
		wg                    sync.WaitGroup
		storage, upload, scan measurement
		overrides             []cdnapi.ComponentOverride
		overridesErr          error
		regions               regionRound
	)
	e.probeRegions(ctx, wg.Go, &regions)
	wg.Go(func() { storage = e.pingStore(ctx) })
	wg.Go(func() { overrides, overridesErr = e.readOverrides(ctx) })
	upload, scan = notDeployed, notDeployed
	if e.cfg.Upload != nil {
		wg.Go(func() { upload = e.probe(ctx, e.cfg.Upload) })
	}
	if e.cfg.VirusScanning != nil {
		wg.Go(func() { scan = e.probe(ctx, e.cfg.VirusScanning) })
	}
	wg.Wait()
	if ctx.Err() != nil {
		return e.Document()
	}
	e.cfg.Metrics.observe(cdnapi.ComponentStorage, storage)
	e.cfg.Metrics.observe(cdnapi.ComponentUpload, upload)
	e.cfg.Metrics.observe(cdnapi.ComponentVirusScanning, scan)

	e.mu.Lock()
	e.measured[cdnapi.ComponentStorage] = storage
	e.measured[cdnapi.ComponentUpload] = upload
	e.measured[cdnapi.ComponentVirusScanning] = scan
	if overridesErr == nil {
		e.overrides = overrides
		e.overridesStale = false
	} else if !e.overridesStale {
		// Keep the last known overrides: an operator's maintenance
		// window should not flap off because the store hiccups. Storage
		// reports the failure itself, so this is logged once per spell.
		e.overridesStale = true
		e.cfg.Logger.Warn("health: cannot read component overrides; keeping the last known", "error", overridesErr)
	}
	doc := e.publishLocked(true)
	e.observeLocked()
	e.regionsLocked(regions, doc.UpdatedAt)
	e.mu.Unlock()
	e.observeRegions(regions)
	e.flush(ctx)
	return doc
}

// Document returns the last published status document. It never blocks
// on I/O. The caller owns the returned Components slice.
func (e *Evaluator) Document() cdnapi.StatusDocument {
	d := *e.doc.Load()
	d.Components = append([]cdnapi.Component(nil), d.Components...)
	return d
}

// SetDraining marks the process as draining for shutdown: the API component
// is under_maintenance from this call on, unless an operator override says
// otherwise. The document is republished at once, without waiting for the
// next round.
func (e *Evaluator) SetDraining() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.draining = true
	// Before the first evaluation there is nothing to compare with; the
	// first evaluation logs every component.
	e.publishLocked(e.published != nil)
}

// publishLocked builds the document from the last measurements and the
// active overrides, stores it, logs each component whose status changed
// and returns it. e.mu must be held. The placeholder document of New is not
// logged, so the first evaluation logs every component once.
func (e *Evaluator) publishLocked(logChanges bool) cdnapi.StatusDocument {
	now := e.cfg.Now().UTC().Truncate(time.Second)
	active := map[string]cdnapi.ComponentOverride{}
	for _, o := range e.overrides {
		// Overrides come from the database; a value this build does not
		// know is ignored rather than shown.
		if o.Active(now) && o.Status.Valid() {
			active[o.Name] = o
		}
	}

	doc := &cdnapi.StatusDocument{
		Status:     cdnapi.StatusOperational,
		Version:    cdnapi.Version,
		Region:     e.cfg.Region,
		Components: make([]cdnapi.Component, len(cdnapi.Components)),
		UpdatedAt:  now,
	}
	statuses := make(map[string]cdnapi.Status, len(cdnapi.Components))
	for i, name := range cdnapi.Components {
		m := e.measured[name]
		if name == cdnapi.ComponentAPI {
			m = measurement{status: cdnapi.StatusOperational}
			if e.cfg.APIStatus != nil {
				m.status = e.cfg.APIStatus()
			}
			if e.draining {
				m.status = cdnapi.StatusUnderMaintenance
			}
		}
		s := m.status
		// An operator override wins over the measurement: that is what
		// putting a component into maintenance by hand means.
		o, operator := active[name]
		if operator {
			s = o.Status
		}
		e.observed[name] = observation{status: s, at: now, operator: operator, message: o.Message,
			planned: !operator && (name == cdnapi.ComponentAPI && e.draining || m.notDeployed)}
		doc.Components[i] = cdnapi.Component{Name: name, Status: s}
		if operator && !o.Until.IsZero() {
			if doc.Until == nil {
				doc.Until = map[string]time.Time{}
			}
			doc.Until[name] = o.Until // the end the status page shows
		}
		doc.Status = cdnapi.Worst(doc.Status, s)
		statuses[name] = s

		if prev, ok := e.published[name]; logChanges && prev != s {
			attrs := []any{"component", name, "status", s}
			if ok {
				attrs = append(attrs, "previous", prev)
			}
			if m.took > 0 {
				attrs = append(attrs, "took", m.took.Round(time.Microsecond))
			}
			if m.err != nil {
				attrs = append(attrs, "error", m.err)
			}
			e.cfg.Logger.Info("health: component status changed", attrs...)
			source := cdnapi.SourceProbe
			if operator {
				source = cdnapi.SourceOperator
			}
			e.queueLocked(historyOp{change: &cdnapi.StatusChange{Kind: cdnapi.SubjectComponent, Subject: name,
				Status: s, Source: source, Message: o.Message, At: now}})
		}
	}
	if logChanges {
		e.published = statuses
	}
	e.doc.Store(doc)
	// After the store: a reader that took the old channel wakes and reads
	// this document; one that takes the new one reads it already.
	next := make(chan struct{})
	close(*e.next.Swap(&next))
	return e.Document()
}

// Changed returns a channel that is closed when a document is published
// after this call, whether or not a status in it changed. A waiter takes
// it before it reads Document, so that no publication falls between the
// two unseen: the status streams wait on it rather than poll.
func (e *Evaluator) Changed() <-chan struct{} { return *e.next.Load() }
