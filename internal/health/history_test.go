package health

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/teststore"
)

// TestDamper feeds one component's rounds to a damper and checks the
// incident updates it sends: o is operational, x major_outage, s degraded,
// M under_maintenance set by an operator.
func TestDamper(t *testing.T) {
	tests := []struct {
		name   string
		rounds string
		// want lists "round:status" of each update, where round is the
		// round of the update's time and status is "" for operational.
		want []string
	}{
		{"steady", "oooooo", []string{"0:"}},
		{"one failure between successes", "ooxoooxooo", []string{"3:"}},
		{"two failures in a row", "oooxxooo", []string{"0:", "3:major_outage", "5:"}},
		{"flapping every other round is one incident", "oooxoxoxoxooo", []string{"0:", "3:major_outage", "10:"}},
		{"worse while open raises the status", "ooossxxooo", []string{"0:", "3:degraded_performance", "5:major_outage", "7:"}},
		{"opened from the start, dated at the first failure", "xxooo", []string{"0:major_outage", "2:"}},
		{"operator maintenance opens at once", "oooMMooo", []string{"0:", "3:under_maintenance", "5:"}},
		{"a failure after maintenance raises it", "ooxMMxooo", []string{"3:under_maintenance", "5:major_outage", "6:"}},
	}
	t0 := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d damper
			var got []string
			for i, r := range tt.rounds {
				o := observation{at: t0.Add(time.Duration(i) * time.Minute)}
				switch r {
				case 'o':
					o.status = cdnapi.StatusOperational
				case 'x':
					o.status = cdnapi.StatusMajorOutage
				case 's':
					o.status = cdnapi.StatusDegradedPerformance
				case 'M':
					o.status, o.operator, o.message = cdnapi.StatusUnderMaintenance, true, "disks"
				}
				u, ok := d.observe("Storage", o)
				if !ok {
					continue
				}
				round := int(u.At.Sub(t0) / time.Minute)
				s := string(u.Status)
				if u.Status == cdnapi.StatusOperational {
					s = ""
				}
				got = append(got, strconv.Itoa(round)+":"+s)
				if (u.Status == cdnapi.StatusUnderMaintenance) != (u.Message == "disks") {
					t.Errorf("round %d: message %q with status %s", i, u.Message, u.Status)
				}
			}
			if len(got) != len(tt.want) {
				t.Fatalf("updates %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("updates %v, want %v", got, tt.want)
				}
			}
		})
	}
}

// faultyHistory is the real store with a switch that makes its history
// writes fail, as they do while the database is down.
type faultyHistory struct {
	cdnapi.StatusHistory
	down atomic.Bool
}

var errDown = errors.New("database is down")

func (f *faultyHistory) RecordStatusChange(ctx context.Context, c cdnapi.StatusChange) error {
	if f.down.Load() {
		return errDown
	}
	return f.StatusHistory.RecordStatusChange(ctx, c)
}

func (f *faultyHistory) UpdateIncident(ctx context.Context, u cdnapi.IncidentUpdate) error {
	if f.down.Load() {
		return errDown
	}
	return f.StatusHistory.UpdateIncident(ctx, u)
}

// TestEvaluatorRecordsHistory runs rounds against a real store and a real
// HTTP health check of the upload service that fails on command: a single
// failure is recorded as changes but opens no incident, two in a row open
// one, and history written while the store refuses it arrives later with
// its own times.
func TestEvaluatorRecordsHistory(t *testing.T) {
	ctx := context.Background()
	store := teststore.SQLite(t)
	hist := &faultyHistory{StatusHistory: store}
	var failing atomic.Bool
	check := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if failing.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(check.Close)
	now := testNow
	e := New(store, Config{Upload: httpProbe(check.URL), History: hist, PingTimeout: 10 * time.Second,
		SlowThreshold: 5 * time.Second, Now: func() time.Time { return now }})
	round := func(fail bool) {
		failing.Store(fail)
		e.Evaluate(ctx)
		now = now.Add(5 * time.Second)
	}
	for _, fail := range []bool{false, false, false, true, false, false, false} {
		round(fail)
	}
	incidents, err := store.ListIncidents(ctx, cdnapi.IncidentQuery{Limit: 10})
	if err != nil || len(incidents) != 0 {
		t.Fatalf("after one failure: incidents %+v, %v; want none", incidents, err)
	}
	changes, err := store.StatusChanges(ctx, cdnapi.SubjectComponent, time.Time{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	// The first round records every component; the flap, two changes.
	if len(changes) != len(cdnapi.Components)+2 {
		t.Fatalf("changes %+v, want %d", changes, len(cdnapi.Components)+2)
	}

	// The store goes away during an outage of the upload service and comes
	// back after it ended: the incident is recorded with its real times.
	hist.down.Store(true)
	start := now
	round(true)
	round(true)
	round(true)
	end := now
	round(false)
	round(false)
	round(false)
	if got := statusOf(e.Document(), cdnapi.ComponentUpload); got != cdnapi.StatusOperational {
		t.Fatalf("upload is %s after recovering", got)
	}
	hist.down.Store(false)
	round(false)
	incidents, err = store.ListIncidents(ctx, cdnapi.IncidentQuery{Limit: 10})
	if err != nil || len(incidents) != 1 {
		t.Fatalf("incidents %+v, %v; want one", incidents, err)
	}
	want := cdnapi.Incident{ID: incidents[0].ID, Component: cdnapi.ComponentUpload, Status: cdnapi.StatusMajorOutage,
		StartedAt: start.Truncate(time.Second), ResolvedAt: end.Truncate(time.Second),
		UpdatedAt: end.Truncate(time.Second)} // its last change: resolved
	if incidents[0] != want {
		t.Errorf("incident %+v, want %+v", incidents[0], want)
	}

	// An operator's maintenance with a message opens an incident at once.
	if err := store.SetComponentOverride(ctx, cdnapi.ComponentOverride{Name: cdnapi.ComponentVirusScanning,
		Status: cdnapi.StatusUnderMaintenance, Message: "signature database upgrade"}); err != nil {
		t.Fatal(err)
	}
	round(false)
	incidents, err = store.ListIncidents(ctx, cdnapi.IncidentQuery{Limit: 1})
	if err != nil || len(incidents) != 1 || incidents[0].Component != cdnapi.ComponentVirusScanning ||
		incidents[0].Status != cdnapi.StatusUnderMaintenance || incidents[0].Message != "signature database upgrade" || !incidents[0].Open() {
		t.Fatalf("incidents %+v, %v; want the open maintenance with its message", incidents, err)
	}

	// Maintenance set ahead with an end: the incident resolves once the
	// end has passed and the probes have vouched for the component, dated
	// at the first round after the end.
	until := now.Add(12 * time.Second).Truncate(time.Second)
	if err := store.SetComponentOverride(ctx, cdnapi.ComponentOverride{Name: cdnapi.ComponentVirusScanning,
		Status: cdnapi.StatusUnderMaintenance, Message: "signature database upgrade", Until: until}); err != nil {
		t.Fatal(err)
	}
	var firstAfter time.Time
	for range 8 {
		if firstAfter.IsZero() && !now.Before(until) {
			firstAfter = now.Truncate(time.Second)
		}
		round(false)
	}
	incidents, err = store.ListIncidents(ctx, cdnapi.IncidentQuery{Limit: 1})
	if err != nil || len(incidents) != 1 || incidents[0].Open() || !incidents[0].ResolvedAt.Equal(firstAfter) {
		t.Fatalf("incidents %+v, %v; want the maintenance resolved at %v", incidents, err, firstAfter)
	}
}
