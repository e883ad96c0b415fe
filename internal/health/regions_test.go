package health

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/teststore"
)

// statusLetters spells rounds in the tests of this file: o operational,
// s degraded_performance, x major_outage.
var statusLetters = map[rune]cdnapi.Status{
	'o': cdnapi.StatusOperational, 's': cdnapi.StatusDegradedPerformance, 'x': cdnapi.StatusMajorOutage,
}

func letterOf(s cdnapi.Status) string {
	for l, v := range statusLetters {
		if v == s {
			return string(l)
		}
	}
	return "?"
}

func TestDampRegion(t *testing.T) {
	tests := []struct {
		name, probes, want string // a letter per round: what the probe said, what the region shows
	}{
		{"steady", "oooo", "oooo"},
		{"an edge that stops reads down at its second failed round", "ooxxx", "oooxx"},
		{"down from the first round", "xx", "ox"},
		{"back after three operational rounds", "oxxooooo", "ooxxxooo"},
		{"one failure between successes changes nothing", "ooxooxoo", "oooooooo"},
		{"failing every other round holds it down, not flapping", "ooxoxoxoxooo", "ooooxxxxxxxo"},
		{"slow answers", "oossso", "ooosss"},
		{"worst of the window while down", "ossxsss", "oosxxxs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var window []cdnapi.Status
			var was cdnapi.Status
			var got strings.Builder
			for _, l := range tt.probes {
				window = append(window, statusLetters[l])
				if len(window) > DampWindow {
					window = window[1:]
				}
				was = dampRegion(was, window)
				got.WriteString(letterOf(was))
			}
			if got.String() != tt.want {
				t.Errorf("probes %s: region %s, want %s", tt.probes, got.String(), tt.want)
			}
		})
	}
}

func TestEffectiveRegion(t *testing.T) {
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	const (
		op    = cdnapi.StatusOperational
		maint = cdnapi.StatusUnderMaintenance
		down  = cdnapi.StatusMajorOutage
	)
	region := func(s cdnapi.Status) cdnapi.Region { return cdnapi.Region{Code: "FRA1", Status: s} }
	tests := []struct {
		name   string
		r      cdnapi.Region
		probed cdnapi.Status
		ok     bool
		want   cdnapi.Status
	}{
		{"not probed: the store's", region(maint), "", false, maint},
		{"not probed, operational", region(op), "", false, op},
		{"probed, no operator status", region(op), down, true, down},
		{"operator status without end wins", region(maint), down, true, maint},
		{"operator status until later wins", region(maint).WithStatusUntil(maint, now.Add(time.Hour), now), down, true, maint},
		{"operator status past its end: the probe's", region(maint).WithStatusUntil(maint, now.Add(-time.Second), now), down, true, down},
		{"operational held by an operator until later", region(op).WithStatusUntil(op, now.Add(time.Hour), now), down, true, op},
		{"operational held past its end: the probe's", region(op).WithStatusUntil(op, now.Add(-time.Hour), now), down, true, down},
		{"ingested as down: an operator's", region(down), op, true, down},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := EffectiveRegion(tt.r, tt.probed, tt.ok).Status; got != tt.want {
				t.Errorf("status %s, want %s", got, tt.want)
			}
		})
	}
}

// edge is a real health endpoint of a point of presence on a loopback
// port, which can answer slowly, stop listening and start again on the
// same port.
type edge struct {
	t    *testing.T
	addr string
	slow atomic.Int64 // nanoseconds each answer waits
	srv  *httptest.Server
}

func newEdge(t *testing.T) *edge {
	e := &edge{t: t}
	e.start()
	e.addr = e.srv.Listener.Addr().String()
	t.Cleanup(e.stop)
	return e
}

func (e *edge) url() string { return "http://" + e.addr + "/health" }

func (e *edge) start() {
	e.t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(time.Duration(e.slow.Load()))
	}))
	if e.addr != "" {
		// The same port again, as a restarted edge has.
		l, err := net.Listen("tcp", e.addr)
		if err != nil {
			e.t.Fatal(err)
		}
		srv.Listener.Close()
		srv.Listener = l
	}
	srv.Start()
	e.srv = srv
}

func (e *edge) stop() {
	if e.srv != nil {
		e.srv.Close()
		e.srv = nil
	}
}

// putRegions writes regions into st.
func putRegions(t *testing.T, st cdnapi.Transactor, regions ...cdnapi.Region) {
	t.Helper()
	if err := st.Write(context.Background(), func(w cdnapi.Writer) error { return w.PutRegions(context.Background(), regions) }); err != nil {
		t.Fatal(err)
	}
}

var (
	frankfurt = cdnapi.Region{Code: "FRA1", Name: "Frankfurt", Zone: "eu-central", Country: "DE", Status: cdnapi.StatusOperational}
	ashburn   = cdnapi.Region{Code: "IAD1", Name: "Ashburn", Zone: "us-east", Country: "US", Status: cdnapi.StatusOperational}
)

// TestRegionProbes runs rounds against a real store and a real edge that
// stops, comes back and slows down, and checks what the regions read
// through ProbedRegions after each round, and the history recorded.
func TestRegionProbes(t *testing.T) {
	ctx := context.Background()
	store := teststore.SQLite(t)
	putRegions(t, store, frankfurt, ashburn)
	fra := newEdge(t)
	// The stores end an operator's status by the wall clock: so does
	// this test's clock, which then moves on by a round's interval.
	start := time.Now().UTC().Truncate(time.Second)
	now := start
	var logs bytes.Buffer
	e := New(store, Config{
		RegionProbes:  []RegionProbe{{Code: "FRA1", URL: fra.url()}, {Code: "NRT1", URL: fra.url()}},
		Regions:       store,
		History:       store,
		PingTimeout:   5 * time.Second,
		SlowThreshold: 500 * time.Millisecond, // well above a loaded machine's latency spikes
		Logger:        slog.New(slog.NewTextHandler(&logs, nil)),
		Now:           func() time.Time { return now },
	})
	regions := e.ProbedRegions(store)
	round := func() {
		t.Helper()
		e.Evaluate(ctx)
		now = now.Add(5 * time.Second)
	}
	// want checks the status FRA1 is served with after a round, in the
	// list and alone, and that IAD1, not probed, shows the store's.
	want := func(what string, s cdnapi.Status) {
		t.Helper()
		list, err := regions.ListRegions(ctx)
		if err != nil || len(list) != 2 || list[0].Code != "FRA1" || list[0].Status != s || list[1].Status != cdnapi.StatusOperational {
			t.Fatalf("%s: regions %+v, %v; want FRA1 %s", what, list, err, s)
		}
		if r, err := regions.Region(ctx, "FRA1"); err != nil || r.Status != s {
			t.Fatalf("%s: region FRA1 %+v, %v; want %s", what, r, err, s)
		}
	}

	round()
	want("answering", cdnapi.StatusOperational)
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "region=NRT1") {
		t.Errorf("no warning about NRT1, which the store does not have:\n%s", logs.String())
	}
	v := e.RegionsVersion()

	fra.stop()
	round()
	want("one failed round", cdnapi.StatusOperational)
	if e.RegionsVersion() != v {
		t.Error("RegionsVersion changed without a change of a region")
	}
	stoppedAt := now.Truncate(time.Second)
	round()
	want("two failed rounds", cdnapi.StatusMajorOutage)
	if e.RegionsVersion() == v {
		t.Error("RegionsVersion did not change with FRA1")
	}

	fra.start()
	round()
	round()
	want("two answers after the outage", cdnapi.StatusMajorOutage)
	backAt := now.Truncate(time.Second)
	round()
	want("three answers after the outage", cdnapi.StatusOperational)

	fra.slow.Store(int64(800 * time.Millisecond))
	round()
	round()
	want("slow answers", cdnapi.StatusDegradedPerformance)
	fra.slow.Store(0)
	round()
	round()
	round()
	want("quick answers again", cdnapi.StatusOperational)

	incidents, err := regionIncidents(ctx, store)
	if err != nil || len(incidents) != 2 {
		t.Fatalf("incidents %+v, %v; want the outage and the slowness of FRA1", incidents, err)
	}
	outage := incidents[1]
	if outage.Component != "Region FRA1" || outage.Status != cdnapi.StatusMajorOutage ||
		!outage.StartedAt.Equal(stoppedAt.Add(-5*time.Second)) || !outage.ResolvedAt.Equal(backAt.Add(-10*time.Second)) {
		t.Errorf("incident %+v, want Region FRA1 major_outage from the first failed round to the first answer", outage)
	}
	if incidents[0].Component != "Region FRA1" || incidents[0].Status != cdnapi.StatusDegradedPerformance || incidents[0].Open() {
		t.Errorf("incident %+v, want the resolved slowness of Region FRA1", incidents[0])
	}
	changes, err := store.StatusChanges(ctx, cdnapi.SubjectRegion, start, 100)
	if err != nil {
		t.Fatal(err)
	}
	var probes []string
	for _, c := range changes {
		if c.Source == cdnapi.SourceProbe {
			if c.Subject != "FRA1" {
				t.Errorf("a probe change of %s, which is not probed or not stored", c.Subject)
			}
			probes = append(probes, letterOf(c.Status))
		}
	}
	if strings.Join(probes, "") != "oxoso" {
		t.Errorf("probe changes %v, want oxoso", probes)
	}

	// An operator's maintenance wins over a dead edge until it ends, and
	// is an incident at once.
	fra.stop()
	until := now.Add(12 * time.Second).Truncate(time.Second)
	if err := store.SetRegionStatus(ctx, "FRA1", cdnapi.StatusUnderMaintenance, until); err != nil {
		t.Fatal(err)
	}
	for now.Before(until) {
		round()
		want("maintenance over a dead edge", cdnapi.StatusUnderMaintenance)
	}
	incidents, err = regionIncidents(ctx, store)
	if err != nil || len(incidents) != 3 || incidents[0].Status != cdnapi.StatusUnderMaintenance || !incidents[0].Open() {
		t.Fatalf("incidents %+v, %v; want the open maintenance of FRA1", incidents, err)
	}
	// Its end has passed: the dead edge shows.
	if err := store.SetRegionStatus(ctx, "FRA1", cdnapi.StatusOperational, time.Time{}); err != nil {
		t.Fatal(err)
	}
	round()
	want("maintenance over", cdnapi.StatusMajorOutage)
	incidents, err = regionIncidents(ctx, store)
	if err != nil || len(incidents) != 3 || incidents[0].Status != cdnapi.StatusMajorOutage || !incidents[0].Open() {
		t.Fatalf("incidents %+v, %v; want the maintenance raised to the outage", incidents, err)
	}
	// Held operational by an operator over the failing probe.
	if err := store.SetRegionStatus(ctx, "FRA1", cdnapi.StatusOperational, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	round()
	want("held operational", cdnapi.StatusOperational)
}

// regionIncidents lists the regions' incidents, newest first, and not the
// components': on a loaded machine (the race detector, other packages'
// tests) a store ping can take longer than TestRegionProbes's 500ms
// threshold and open a Storage incident of its own.
func regionIncidents(ctx context.Context, store cdnapi.StatusHistory) ([]cdnapi.Incident, error) {
	all, err := store.ListIncidents(ctx, cdnapi.IncidentQuery{Limit: 50})
	var regions []cdnapi.Incident
	for _, in := range all {
		if strings.HasPrefix(in.Component, "Region ") {
			regions = append(regions, in)
		}
	}
	return regions, err
}

// TestRegionProbesRunConcurrently: the edges of a round are probed at the
// same time. The edge answers no probe until three are waiting on it, which
// only concurrent probes achieve; probed one after the other, each would
// wait out the timeout and read major_outage.
func TestRegionProbesRunConcurrently(t *testing.T) {
	var waiting atomic.Int32
	all := make(chan struct{})
	edge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if waiting.Add(1) == 3 {
			close(all)
		}
		select {
		case <-all:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(edge.Close)
	store := teststore.SQLite(t)
	putRegions(t, store, frankfurt, ashburn, cdnapi.Region{Code: "AMS1", Name: "Amsterdam", Zone: "eu-west", Country: "NL", Status: cdnapi.StatusOperational})
	e := New(store, Config{
		RegionProbes:  []RegionProbe{{Code: "FRA1", URL: edge.URL}, {Code: "IAD1", URL: edge.URL}, {Code: "AMS1", URL: edge.URL}},
		Regions:       store,
		PingTimeout:   10 * time.Second,
		SlowThreshold: 10 * time.Second,
		Now:           fixedClock,
	})
	// Two rounds of failures would show; one round of answers shows as
	// operational either way, so check the probes' own results.
	e.Evaluate(context.Background())
	for i, r := range e.regions {
		if len(r.window) != 1 || r.window[0] != cdnapi.StatusOperational {
			t.Errorf("region %d probed %v, want one operational answer", i, r.window)
		}
	}
}

// TestOperatorRegionIncidents: a region that is not probed, put into a
// status by an operator, has its incident opened at the next round, raised,
// and resolved when the status is cleared or ends; regions the operator
// leaves alone have none. Once, a region in partial outage showed on no
// incident list.
func TestOperatorRegionIncidents(t *testing.T) {
	ctx := context.Background()
	store := teststore.SQLite(t)
	putRegions(t, store, frankfurt, ashburn)
	e := New(store, Config{Regions: store, History: store, Interval: time.Hour})
	incidents := func() []cdnapi.Incident {
		t.Helper()
		list, err := store.ListIncidents(ctx, cdnapi.IncidentQuery{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		return list
	}
	e.Evaluate(ctx)
	if list := incidents(); len(list) != 0 {
		t.Fatalf("incidents with every region operational: %+v", list)
	}

	steps := []struct {
		status cdnapi.Status
		want   cdnapi.Status // of the Region FRA1 incident
		open   bool
	}{
		{cdnapi.StatusPartialOutage, cdnapi.StatusPartialOutage, true},
		{cdnapi.StatusMajorOutage, cdnapi.StatusMajorOutage, true}, // raised
		{cdnapi.StatusOperational, cdnapi.StatusMajorOutage, false},
	}
	for _, st := range steps {
		if err := store.SetRegionStatus(ctx, "FRA1", st.status, time.Time{}); err != nil {
			t.Fatal(err)
		}
		e.Evaluate(ctx)
		list := incidents()
		if len(list) != 1 || list[0].Component != "Region FRA1" || list[0].Status != st.want || list[0].Open() != st.open {
			t.Fatalf("after FRA1 set to %s: incidents %+v, want one of Region FRA1, %s, open %v", st.status, list, st.want, st.open)
		}
	}

	// A status with an end resolves its incident once the end has passed.
	if err := store.SetRegionStatus(ctx, "IAD1", cdnapi.StatusUnderMaintenance, time.Now().Add(1500*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	iad := func() cdnapi.Incident {
		t.Helper()
		list := incidents()
		i := slices.IndexFunc(list, func(inc cdnapi.Incident) bool { return inc.Component == "Region IAD1" })
		if len(list) != 2 || i < 0 {
			t.Fatalf("incidents %+v, want FRA1's and IAD1's", list)
		}
		return list[i]
	}
	e.Evaluate(ctx)
	if inc := iad(); !inc.Open() || inc.Status != cdnapi.StatusUnderMaintenance {
		t.Fatalf("after IAD1's maintenance began: %+v", inc)
	}
	time.Sleep(2 * time.Second) // the stores end a status by the wall clock, in whole seconds
	e.Evaluate(ctx)
	if inc := iad(); inc.Open() {
		t.Fatalf("after IAD1's maintenance ended: %+v", inc)
	}
}
