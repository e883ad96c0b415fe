package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
)

// Quarantine returns a valid quarantine fixture of project, at Epoch.
func Quarantine(project, path string) cdnapi.Quarantine {
	return cdnapi.Quarantine{Project: project, Path: path, Bytes: 68,
		Checksum:  "sha256:275a021bbfb6489e54d471899f7db9d1663fc695ec2fe2a2c4538aabf651fd0f",
		Signature: "Eicar-Test-Signature", At: Epoch.Add(1500 * time.Millisecond)}
}

// testQuarantineEvents: RecordQuarantine writes one file.quarantined event
// with the quarantine in it, queued for the webhooks that want the type;
// recording it again under the same ID (a scanner's retry) writes and
// queues nothing more, even with a later time.
func testQuarantineEvents(t *testing.T, s WebhookStore) {
	ctx := t.Context()
	all := addHook(t, s, Hook(0))
	only := addHook(t, s, Hook(1, cdnapi.EventFileQuarantined))
	statusOnly := addHook(t, s, Hook(2, cdnapi.EventIncidentOpened, cdnapi.EventRegionChanged))
	q := Quarantine("acme", "uploads/2026/invoice.pdf.exe")
	id := cdnapi.QuarantineEventID(q.Project, q.Path, q.Checksum)
	if err := s.RecordQuarantine(ctx, id, q); err != nil {
		t.Fatalf("RecordQuarantine: %v", err)
	}
	retry := q
	retry.At = q.At.Add(time.Minute)
	if err := s.RecordQuarantine(ctx, id, retry); err != nil {
		t.Fatalf("RecordQuarantine again with the same ID: %v", err)
	}
	other := Quarantine("acme", "uploads/other.zip")
	otherID := cdnapi.QuarantineEventID(other.Project, other.Path, other.Checksum)
	if err := s.RecordQuarantine(ctx, otherID, other); err != nil {
		t.Fatalf("RecordQuarantine of another upload: %v", err)
	}
	if st, err := s.OutboxStats(ctx); err != nil || st.Pending != 4 {
		t.Errorf("OutboxStats = %+v, %v; want 4 pending: 2 events for 2 webhooks", st, err)
	}
	for _, w := range []cdnapi.Webhook{all, only} {
		ds := claimAll(t, s, w)
		if len(ds) != 2 {
			t.Fatalf("webhook %s claimed %d deliveries, want 2: %+v", w.ID, len(ds), ds)
		}
		for i, want := range []struct {
			id string
			q  cdnapi.Quarantine
		}{{id, q}, {otherID, other}} {
			e := ds[i].Event
			g := e.Quarantine
			if e.ID != want.id || e.Type != cdnapi.EventFileQuarantined || e.Incident != nil || e.Region != nil || g == nil {
				t.Fatalf("delivery %d = %+v, want the file.quarantined event %s", i, e, want.id)
			}
			wq := want.q
			if g.Project != wq.Project || g.Path != wq.Path || g.Bytes != wq.Bytes || g.Checksum != wq.Checksum ||
				g.Signature != wq.Signature || !g.At.Equal(wq.At.Truncate(time.Second)) || g.At.Location() != time.UTC {
				t.Errorf("delivery %d quarantine = %+v, want %+v (at in whole seconds, UTC)", i, *g, wq)
			}
			if time.Since(e.At) > time.Minute || e.At.Nanosecond() != 0 {
				t.Errorf("event at %v, want just now in whole seconds", e.At)
			}
		}
		for _, d := range ds {
			finish(t, s, d, cdnapi.DeliveryDelivered, 0)
		}
	}
	if ds := claimAll(t, s, statusOnly); len(ds) != 0 {
		t.Errorf("a webhook without file.quarantined claimed %+v", ds)
	}
	// Delivered and recorded again: still nothing new to deliver.
	if err := s.RecordQuarantine(ctx, id, q); err != nil {
		t.Fatal(err)
	}
	if st, err := s.OutboxStats(ctx); err != nil || st.Pending != 0 {
		t.Errorf("after delivery and a third record: OutboxStats = %+v, %v; want nothing pending", st, err)
	}
	// The old events are pruned like the others.
	if n, err := s.DeleteEventsBefore(ctx, time.Now().Add(time.Hour), 100); err != nil || n != 2+4 {
		t.Errorf("DeleteEventsBefore = %d, %v; want the 2 events and their 4 attempts", n, err)
	}
}

// testQuarantineRefused: an invalid quarantine or event ID is refused and
// writes nothing.
func testQuarantineRefused(t *testing.T, s WebhookStore) {
	ctx := t.Context()
	w := addHook(t, s, Hook(0))
	good := Quarantine("acme", "a.exe")
	id := cdnapi.QuarantineEventID(good.Project, good.Path, good.Checksum)
	for name, c := range map[string]struct {
		id     string
		change func(q *cdnapi.Quarantine)
	}{
		"empty project":  {id, func(q *cdnapi.Quarantine) { q.Project = "" }},
		"empty path":     {id, func(q *cdnapi.Quarantine) { q.Path = "" }},
		"bad checksum":   {id, func(q *cdnapi.Quarantine) { q.Checksum = "md5:" + strings.Repeat("0", 32) }},
		"empty checksum": {id, func(q *cdnapi.Quarantine) { q.Checksum = "" }},
		"no signature":   {id, func(q *cdnapi.Quarantine) { q.Signature = "" }},
		"negative bytes": {id, func(q *cdnapi.Quarantine) { q.Bytes = -1 }},
		"no time":        {id, func(q *cdnapi.Quarantine) { q.At = time.Time{} }},
		"bad id":         {"evt_" + strings.Repeat("g", 32), func(*cdnapi.Quarantine) {}},
		"empty id":       {"", func(*cdnapi.Quarantine) {}},
	} {
		q := good
		c.change(&q)
		if err := s.RecordQuarantine(ctx, c.id, q); err == nil {
			t.Errorf("%s: RecordQuarantine accepts %q %+v", name, c.id, q)
		}
	}
	if ds := claimAll(t, s, w); len(ds) != 0 {
		t.Errorf("refused quarantines were queued: %+v", ds)
	}
}
