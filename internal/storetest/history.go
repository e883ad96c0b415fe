package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
)

// history returns s as a StatusHistory; every engine must be one.
func history(t *testing.T, s cdnapi.Store) cdnapi.StatusHistory {
	t.Helper()
	h, ok := s.(cdnapi.StatusHistory)
	if !ok {
		t.Fatalf("%T does not implement cdnapi.StatusHistory", s)
	}
	return h
}

// testStatusChanges: component changes come back oldest first, in whole
// UTC seconds, with their source and message; region changes are recorded
// by the store on insert and on a change of status only.
func testStatusChanges(t *testing.T, s cdnapi.Store) {
	ctx, h := t.Context(), history(t, s)
	zone := time.FixedZone("UTC+2", 2*3600)
	changes := []cdnapi.StatusChange{
		{Kind: cdnapi.SubjectComponent, Subject: cdnapi.ComponentStorage, Status: cdnapi.StatusMajorOutage,
			Source: cdnapi.SourceProbe, At: time.Date(2026, 11, 20, 13, 0, 0, 600_000_000, zone)},
		{Kind: cdnapi.SubjectComponent, Subject: cdnapi.ComponentUpload, Status: cdnapi.StatusUnderMaintenance,
			Source: cdnapi.SourceOperator, Message: "Upgrading the upload fleet – back by 18:00 «UTC»", At: Epoch},
		{Kind: cdnapi.SubjectComponent, Subject: cdnapi.ComponentStorage, Status: cdnapi.StatusOperational,
			Source: cdnapi.SourceProbe, At: Epoch},
	}
	for _, c := range changes {
		if err := h.RecordStatusChange(ctx, c); err != nil {
			t.Fatalf("RecordStatusChange(%+v): %v", c, err)
		}
	}
	if err := h.RecordStatusChange(ctx, cdnapi.StatusChange{Kind: cdnapi.SubjectComponent, Subject: "API", Status: "broken"}); err == nil {
		t.Error("RecordStatusChange with an invalid status: no error")
	}
	got, err := h.StatusChanges(ctx, cdnapi.SubjectComponent, time.Time{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(changes) {
		t.Fatalf("StatusChanges = %d changes, want %d: %+v", len(got), len(changes), got)
	}
	for i, w := range changes {
		w.At = w.At.UTC().Truncate(time.Second)
		if got[i] != w {
			t.Errorf("change %d = %+v, want %+v", i, got[i], w)
		}
	}
	// since is inclusive; limit bounds the answer.
	if got, err := h.StatusChanges(ctx, cdnapi.SubjectComponent, Epoch, 1); err != nil || len(got) != 1 || got[0].Subject != cdnapi.ComponentUpload {
		t.Errorf("StatusChanges(since Epoch, limit 1) = %+v, %v; want the upload change", got, err)
	}

	// Regions: inserting records each; rewriting the same status records
	// nothing; a new status records one.
	putRegions(t, s, Regions())
	putRegions(t, s, Regions())
	if err := s.SetRegionStatus(ctx, "FRA1", cdnapi.StatusPartialOutage, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetRegionStatus(ctx, "FRA1", cdnapi.StatusPartialOutage, time.Time{}); err != nil {
		t.Fatal(err)
	}
	regions, err := h.StatusChanges(ctx, cdnapi.SubjectRegion, time.Time{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(regions) != len(Regions())+1 {
		t.Fatalf("region changes = %d, want %d: %+v", len(regions), len(Regions())+1, regions)
	}
	last := regions[len(regions)-1]
	if last.Subject != "FRA1" || last.Status != cdnapi.StatusPartialOutage || last.Source != cdnapi.SourceOperator ||
		time.Since(last.At) > time.Minute || last.At.Location() != time.UTC {
		t.Errorf("last region change = %+v, want FRA1 partial_outage by an operator, now, UTC", last)
	}
}

// testIncidents: an incident opens when a component leaves operational,
// keeps the worst status and the last message, resolves once, and there is
// one open incident per component at most. Its UpdatedAt is its last
// change; testIncidentUpdatedAt checks it against the events.
func testIncidents(t *testing.T, s cdnapi.Store) {
	ctx, h := t.Context(), history(t, s)
	at := func(min int) time.Time { return Epoch.Add(time.Duration(min) * time.Minute) }
	updates := []cdnapi.IncidentUpdate{
		{Component: cdnapi.ComponentStorage, Status: cdnapi.StatusOperational, At: at(0)}, // nothing open: nothing happens
		{Component: cdnapi.ComponentStorage, Status: cdnapi.StatusDegradedPerformance, At: at(1)},
		{Component: cdnapi.ComponentStorage, Status: cdnapi.StatusMajorOutage, At: at(2)},
		{Component: cdnapi.ComponentStorage, Status: cdnapi.StatusDegradedPerformance, At: at(3)}, // worst stays major
		{Component: cdnapi.ComponentUpload, Status: cdnapi.StatusUnderMaintenance, Message: "new disks", At: at(3)},
		{Component: cdnapi.ComponentUpload, Status: cdnapi.StatusUnderMaintenance, At: at(4)}, // keeps the message
		{Component: cdnapi.ComponentStorage, Status: cdnapi.StatusOperational, At: at(5)},
		{Component: cdnapi.ComponentStorage, Status: cdnapi.StatusOperational, At: at(6)}, // resolved once only
		{Component: cdnapi.ComponentStorage, Status: cdnapi.StatusPartialOutage, Message: "disk full", At: at(7)},
	}
	for _, u := range updates {
		if err := h.UpdateIncident(ctx, u); err != nil {
			t.Fatalf("UpdateIncident(%+v): %v", u, err)
		}
	}
	got, err := h.ListIncidents(ctx, cdnapi.IncidentQuery{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	want := []cdnapi.Incident{
		{Component: cdnapi.ComponentStorage, Status: cdnapi.StatusPartialOutage, Message: "disk full", StartedAt: at(7), UpdatedAt: at(7)},
		// Re-reported with no message: no change, updated stays at the start.
		{Component: cdnapi.ComponentUpload, Status: cdnapi.StatusUnderMaintenance, Message: "new disks", StartedAt: at(3), UpdatedAt: at(3)},
		// Worse at 2, not at 3; resolved at 5.
		{Component: cdnapi.ComponentStorage, Status: cdnapi.StatusMajorOutage, StartedAt: at(1), ResolvedAt: at(5), UpdatedAt: at(5)},
	}
	if len(got) != len(want) {
		t.Fatalf("ListIncidents = %+v, want %d incidents", got, len(want))
	}
	ids := map[string]bool{}
	for i, w := range want {
		g := got[i]
		if !ValidIncidentID(g.ID) || ids[g.ID] {
			t.Errorf("incident %d: ID %q is malformed or repeated", i, g.ID)
		}
		ids[g.ID] = true
		w.ID = g.ID
		if g != w {
			t.Errorf("incident %d = %+v, want %+v", i, g, w)
		}
	}

	// Paging walks the same list; IncidentsSince sees the open ones and
	// those resolved at or after since.
	first, err := h.ListIncidents(ctx, cdnapi.IncidentQuery{Limit: 2})
	if err != nil || len(first) != 2 {
		t.Fatalf("ListIncidents(limit 2) = %v, %v", first, err)
	}
	rest, err := h.ListIncidents(ctx, cdnapi.IncidentQuery{Limit: 2,
		After: &cdnapi.Position{CreatedAt: first[1].StartedAt, ID: first[1].ID}})
	if err != nil || len(rest) != 1 || rest[0].ID != got[2].ID {
		t.Fatalf("ListIncidents after the second = %+v, %v; want the third", rest, err)
	}
	for _, tt := range []struct {
		since time.Time
		want  int
	}{{at(5), 3}, {at(6), 2}} {
		inc, err := h.IncidentsSince(ctx, tt.since)
		if err != nil || len(inc) != tt.want {
			t.Errorf("IncidentsSince(%v) = %+v, %v; want %d", tt.since, inc, err, tt.want)
		}
	}
}

// testDeleteHistory: changes made and incidents resolved before the cutoff
// go, in batches; open incidents and newer rows stay.
func testDeleteHistory(t *testing.T, s cdnapi.Store) {
	ctx, h := t.Context(), history(t, s)
	old, recent := Epoch.Add(-100*24*time.Hour), Epoch
	for i := range 3 {
		c := cdnapi.StatusChange{Kind: cdnapi.SubjectComponent, Subject: cdnapi.ComponentAPI,
			Status: cdnapi.StatusOperational, Source: cdnapi.SourceProbe, At: old.Add(time.Duration(i) * time.Second)}
		if err := h.RecordStatusChange(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	c := cdnapi.StatusChange{Kind: cdnapi.SubjectComponent, Subject: cdnapi.ComponentAPI,
		Status: cdnapi.StatusOperational, Source: cdnapi.SourceProbe, At: recent}
	if err := h.RecordStatusChange(ctx, c); err != nil {
		t.Fatal(err)
	}
	for _, u := range []cdnapi.IncidentUpdate{
		{Component: cdnapi.ComponentAPI, Status: cdnapi.StatusMajorOutage, At: old},
		{Component: cdnapi.ComponentAPI, Status: cdnapi.StatusOperational, At: old.Add(time.Hour)},
		{Component: cdnapi.ComponentStorage, Status: cdnapi.StatusMajorOutage, At: old}, // still open
	} {
		if err := h.UpdateIncident(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	cutoff := Epoch.Add(-90 * 24 * time.Hour)
	total := 0
	for _, want := range []int{2, 2, 0} {
		n, err := h.DeleteHistoryBefore(ctx, cutoff, 2)
		if err != nil || n != want {
			t.Fatalf("DeleteHistoryBefore(limit 2) = %d, %v; want %d", n, err, want)
		}
		total += n
	}
	changes, err := h.StatusChanges(ctx, cdnapi.SubjectComponent, time.Time{}, 10)
	if err != nil || len(changes) != 1 || !changes[0].At.Equal(recent) {
		t.Errorf("changes left = %+v, %v; want the recent one", changes, err)
	}
	inc, err := h.ListIncidents(ctx, cdnapi.IncidentQuery{Limit: 10})
	if err != nil || len(inc) != 1 || inc[0].Component != cdnapi.ComponentStorage || !inc[0].Open() {
		t.Errorf("incidents left = %+v, %v; want the open one", inc, err)
	}
}

// testOverrideMessage: the operator's message is kept with the override.
func testOverrideMessage(t *testing.T, s cdnapi.Store) {
	ctx := t.Context()
	o := cdnapi.ComponentOverride{Name: cdnapi.ComponentUpload, Status: cdnapi.StatusUnderMaintenance,
		UpdatedAt: Epoch, Message: "Moving to new racks; uploads resume at 18:00 UTC"}
	if err := s.SetComponentOverride(ctx, o); err != nil {
		t.Fatal(err)
	}
	got, err := s.ComponentOverrides(ctx)
	if err != nil || len(got) != 1 || got[0].Message != o.Message {
		t.Fatalf("ComponentOverrides = %+v, %v; want the message %q", got, err, o.Message)
	}
	o.Message = ""
	if err := s.SetComponentOverride(ctx, o); err != nil {
		t.Fatal(err)
	}
	if got, err := s.ComponentOverrides(ctx); err != nil || got[0].Message != "" {
		t.Fatalf("after replacing without a message: %+v, %v", got, err)
	}
}

// ValidIncidentID reports whether id has the shape of an incident ID.
func ValidIncidentID(id string) bool {
	rest, ok := strings.CutPrefix(id, cdnapi.IncidentIDPrefix)
	if !ok || len(rest) < 1 || len(rest) > 64 {
		return false
	}
	for _, c := range rest {
		if !('0' <= c && c <= '9' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z') {
			return false
		}
	}
	return true
}
