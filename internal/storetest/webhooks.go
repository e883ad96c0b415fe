package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
)

// WebhookStore is what the webhook suite needs: the outbox, and the
// changes that write events into it.
type WebhookStore interface {
	cdnapi.WebhookStore
	cdnapi.StatusHistory
	cdnapi.Transactor
	cdnapi.QuarantineRecorder
}

// RunWebhooks runs the behaviour suite of cdnapi.WebhookStore against the
// stores newStore makes, which must be fresh, empty and migrated.
func RunWebhooks(t *testing.T, newStore func(t *testing.T) WebhookStore) {
	tests := []struct {
		name string
		run  func(t *testing.T, s WebhookStore)
	}{
		{"AddListRemove", testWebhooksAddListRemove},
		{"IncidentEvents", testIncidentEvents},
		{"IncidentUpdatedAt", testIncidentUpdatedAt},
		{"RotateSecret", testRotateSecret},
		{"RegionEvents", testRegionEvents},
		{"ClaimLeaseRetry", testClaimLeaseRetry},
		{"GoneRemovesWebhook", testGoneRemovesWebhook},
		{"DeleteEventsBefore", testDeleteEventsBefore},
		{"QuarantineEvents", testQuarantineEvents},
		{"QuarantineRefused", testQuarantineRefused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, newStore(t)) })
	}
}

// Hook returns a webhook fixture subscribed to types (every type if none),
// created at Epoch plus i seconds.
func Hook(i int, types ...cdnapi.EventType) cdnapi.Webhook {
	if len(types) == 0 {
		types = cdnapi.EventTypes
	}
	return cdnapi.Webhook{ID: cdnapi.NewWebhookID(), URL: "https://hooks.example.com/cdn?n=" + string(rune('a'+i)),
		Secret: cdnapi.NewWebhookSecret(), Events: types, CreatedAt: Epoch.Add(time.Duration(i) * time.Second)}
}

func addHook(t *testing.T, s WebhookStore, w cdnapi.Webhook) cdnapi.Webhook {
	t.Helper()
	if err := s.AddWebhook(t.Context(), w); err != nil {
		t.Fatalf("AddWebhook: %v", err)
	}
	return w
}

// claimAll claims every due delivery of w with a long lease.
func claimAll(t *testing.T, s WebhookStore, w cdnapi.Webhook) []cdnapi.Delivery {
	t.Helper()
	ds, err := s.ClaimDeliveries(t.Context(), w.ID, 100, time.Hour)
	if err != nil {
		t.Fatalf("ClaimDeliveries: %v", err)
	}
	return ds
}

func finish(t *testing.T, s WebhookStore, d cdnapi.Delivery, r cdnapi.DeliveryResult, retryIn time.Duration) {
	t.Helper()
	a := cdnapi.DeliveryAttempt{WebhookID: d.Webhook.ID, EventID: d.Event.ID, EventType: d.Event.Type,
		Attempt: d.Attempt, At: time.Now(), StatusCode: 500, Latency: 1500 * time.Microsecond, Error: "", Result: r}
	if err := s.FinishDelivery(t.Context(), d, a, retryIn); err != nil {
		t.Fatalf("FinishDelivery(%s): %v", r, err)
	}
}

func testWebhooksAddListRemove(t *testing.T, s WebhookStore) {
	ctx := t.Context()
	a := addHook(t, s, Hook(1, cdnapi.EventIncidentOpened, cdnapi.EventRegionChanged))
	b := addHook(t, s, Hook(0))
	got, err := s.Webhooks(ctx)
	if err != nil || len(got) != 2 {
		t.Fatalf("Webhooks = %+v, %v; want 2", got, err)
	}
	for i, w := range []cdnapi.Webhook{b, a} { // oldest first
		g := got[i]
		if g.ID != w.ID || g.URL != w.URL || g.Secret != w.Secret || !g.CreatedAt.Equal(w.CreatedAt) ||
			len(g.Events) != len(w.Events) || !g.Wants(w.Events[0]) || !g.Wants(w.Events[len(w.Events)-1]) {
			t.Errorf("webhook %d = %+v, want %+v", i, g, w)
		}
	}
	if err := s.AddWebhook(ctx, a); err == nil {
		t.Error("AddWebhook with a used ID: no error")
	}
	if err := s.RemoveWebhook(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveWebhook(ctx, a.ID); !errors.Is(err, cdnapi.ErrNotFound) {
		t.Errorf("RemoveWebhook of a removed webhook = %v, want ErrNotFound", err)
	}
	if got, _ := s.Webhooks(ctx); len(got) != 1 || got[0].ID != b.ID {
		t.Errorf("after remove: %+v", got)
	}
}

// testIncidentEvents: opening, worsening, re-reporting and resolving an
// incident write opened, updated, nothing and resolved, each with the
// incident as it was then, queued only for the webhooks that want it.
func testIncidentEvents(t *testing.T, s WebhookStore) {
	ctx := t.Context()
	all := addHook(t, s, Hook(0))
	resolvedOnly := addHook(t, s, Hook(1, cdnapi.EventIncidentResolved))
	updates := []cdnapi.IncidentUpdate{
		{Component: cdnapi.ComponentStorage, Status: cdnapi.StatusDegradedPerformance, At: Epoch},
		{Component: cdnapi.ComponentStorage, Status: cdnapi.StatusDegradedPerformance, At: Epoch.Add(time.Second)}, // no news
		{Component: cdnapi.ComponentStorage, Status: cdnapi.StatusMajorOutage, Message: "Disks", At: Epoch.Add(2 * time.Second)},
		{Component: cdnapi.ComponentStorage, Status: cdnapi.StatusOperational, At: Epoch.Add(3 * time.Second)},
		{Component: cdnapi.ComponentStorage, Status: cdnapi.StatusOperational, At: Epoch.Add(4 * time.Second)}, // none open
	}
	for _, u := range updates {
		if err := s.UpdateIncident(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	ds := claimAll(t, s, all)
	want := []struct {
		typ      cdnapi.EventType
		status   cdnapi.Status
		message  string
		resolved bool
	}{
		{cdnapi.EventIncidentOpened, cdnapi.StatusDegradedPerformance, "", false},
		{cdnapi.EventIncidentUpdated, cdnapi.StatusMajorOutage, "Disks", false},
		{cdnapi.EventIncidentResolved, cdnapi.StatusMajorOutage, "Disks", true},
	}
	if len(ds) != len(want) {
		t.Fatalf("claimed %d deliveries, want %d: %+v", len(ds), len(want), ds)
	}
	ids := map[string]bool{}
	for i, w := range want {
		d := ds[i]
		inc := d.Event.Incident
		if d.Event.Type != w.typ || inc == nil || inc.Status != w.status || inc.Message != w.message ||
			inc.Component != cdnapi.ComponentStorage || !inc.StartedAt.Equal(Epoch) || inc.Open() == w.resolved ||
			!ValidIncidentID(inc.ID) {
			t.Errorf("delivery %d = %+v %+v, want %+v", i, d.Event, inc, w)
		}
		if w.resolved && !inc.ResolvedAt.Equal(Epoch.Add(3*time.Second)) {
			t.Errorf("resolved at %v", inc.ResolvedAt)
		}
		if d.Attempt != 1 || d.Webhook.ID != all.ID || d.Webhook.Secret != all.Secret || d.Queued.IsZero() {
			t.Errorf("delivery %d: attempt %d, webhook %+v, queued %v", i, d.Attempt, d.Webhook, d.Queued)
		}
		if len(d.Event.ID) != len(cdnapi.EventIDPrefix)+32 || d.Event.ID[:4] != cdnapi.EventIDPrefix || ids[d.Event.ID] {
			t.Errorf("event id %q: want a fresh evt_ and 32 hex digits", d.Event.ID)
		}
		ids[d.Event.ID] = true
	}
	// One event, queued for each webhook that wants it, under one ID.
	if got := claimAll(t, s, resolvedOnly); len(got) != 1 || got[0].Event.ID != ds[2].Event.ID {
		t.Errorf("the resolved-only webhook claimed %+v, want the resolved event %s", got, ds[2].Event.ID)
	}
}

// testIncidentUpdatedAt: an open incident's UpdatedAt moves exactly when an
// incident event is written (a worse status, another message), and not
// when it is re-reported, a better status or the same message, so that the
// Atom feed and the webhooks tell of the same changes.
func testIncidentUpdatedAt(t *testing.T, s WebhookStore) {
	ctx := t.Context()
	w := addHook(t, s, Hook(0))
	at := func(sec int) time.Time { return Epoch.Add(time.Duration(sec) * time.Second) }
	steps := []struct {
		u       cdnapi.IncidentUpdate
		event   cdnapi.EventType // "" for none
		updated time.Time
	}{
		{cdnapi.IncidentUpdate{Status: cdnapi.StatusDegradedPerformance, At: at(0)}, cdnapi.EventIncidentOpened, at(0)},
		{cdnapi.IncidentUpdate{Status: cdnapi.StatusDegradedPerformance, At: at(10)}, "", at(0)},
		{cdnapi.IncidentUpdate{Status: cdnapi.StatusDegradedPerformance, Message: "Slow disks", At: at(20)}, cdnapi.EventIncidentUpdated, at(20)},
		{cdnapi.IncidentUpdate{Status: cdnapi.StatusDegradedPerformance, Message: "Slow disks", At: at(30)}, "", at(20)},
		{cdnapi.IncidentUpdate{Status: cdnapi.StatusPartialOutage, At: at(40)}, cdnapi.EventIncidentUpdated, at(40)},
		{cdnapi.IncidentUpdate{Status: cdnapi.StatusDegradedPerformance, At: at(50)}, "", at(40)}, // better: the worst stays
		{cdnapi.IncidentUpdate{Status: cdnapi.StatusDegradedPerformance, Message: "Replaced", At: at(60)}, cdnapi.EventIncidentUpdated, at(60)},
		{cdnapi.IncidentUpdate{Status: cdnapi.StatusOperational, At: at(70)}, cdnapi.EventIncidentResolved, at(70)},
	}
	for i, step := range steps {
		step.u.Component = cdnapi.ComponentStorage
		if err := s.UpdateIncident(ctx, step.u); err != nil {
			t.Fatal(err)
		}
		ds := claimAll(t, s, w)
		switch {
		case step.event == "" && len(ds) != 0:
			t.Errorf("step %d: events %+v, want none", i, ds)
		case step.event != "" && (len(ds) != 1 || ds[0].Event.Type != step.event):
			t.Errorf("step %d: events %+v, want one %s", i, ds, step.event)
		}
		for _, d := range ds {
			finish(t, s, d, cdnapi.DeliveryDelivered, time.Minute)
		}
		inc, err := s.ListIncidents(ctx, cdnapi.IncidentQuery{Limit: 1})
		if err != nil || len(inc) != 1 {
			t.Fatalf("step %d: ListIncidents = %+v, %v", i, inc, err)
		}
		if !inc[0].UpdatedAt.Equal(step.updated) {
			t.Errorf("step %d (%+v): UpdatedAt %v, want %v", i, step.u, inc[0].UpdatedAt, step.updated)
		}
	}
}

// testRotateSecret: a rotation makes the new secret the webhook's and
// keeps the old one, with the end of its grace, for the list and for each
// claimed delivery; another rotation keeps only the last two secrets, one
// with no grace none, and an unknown webhook is ErrNotFound.
func testRotateSecret(t *testing.T, s WebhookStore) {
	ctx := t.Context()
	w := addHook(t, s, Hook(0))
	other := addHook(t, s, Hook(1))
	check := func(when, secret, previous string, until time.Time) {
		t.Helper()
		hooks, err := s.Webhooks(ctx)
		if err != nil || len(hooks) != 2 {
			t.Fatalf("%s: Webhooks = %+v, %v", when, hooks, err)
		}
		if g := hooks[0]; g.Secret != secret || g.PreviousSecret != previous || !g.PreviousUntil.Equal(until) {
			t.Errorf("%s: webhook %+v, want secret %s, previous %q until %v", when, g, secret, previous, until)
		}
		if g := hooks[1]; g.Secret != other.Secret || g.PreviousSecret != "" || !g.PreviousUntil.IsZero() {
			t.Errorf("%s: the other webhook changed: %+v", when, g)
		}
		must(t, s.UpdateIncident(ctx, cdnapi.IncidentUpdate{Component: "API", Status: cdnapi.StatusMajorOutage, At: Epoch}))
		must(t, s.UpdateIncident(ctx, cdnapi.IncidentUpdate{Component: "API", Status: cdnapi.StatusOperational, At: Epoch}))
		ds := claimAll(t, s, w)
		if len(ds) != 2 {
			t.Fatalf("%s: claimed %d deliveries, want 2", when, len(ds))
		}
		for _, d := range ds {
			if d.Webhook.Secret != secret || d.Webhook.PreviousSecret != previous || !d.Webhook.PreviousUntil.Equal(until) {
				t.Errorf("%s: delivery's webhook %+v", when, d.Webhook)
			}
			finish(t, s, d, cdnapi.DeliveryDelivered, time.Minute)
		}
	}
	check("before", w.Secret, "", time.Time{})
	second, third := cdnapi.NewWebhookSecret(), cdnapi.NewWebhookSecret()
	until := Epoch.Add(24 * time.Hour)
	must(t, s.RotateWebhookSecret(ctx, w.ID, second, until))
	check("rotated", second, w.Secret, until)
	must(t, s.RotateWebhookSecret(ctx, w.ID, third, until.Add(time.Hour)))
	check("rotated again", third, second, until.Add(time.Hour))
	must(t, s.RotateWebhookSecret(ctx, w.ID, w.Secret, time.Time{}))
	check("rotated with no grace", w.Secret, "", time.Time{})
	if err := s.RotateWebhookSecret(ctx, "wh_none", second, until); !errors.Is(err, cdnapi.ErrNotFound) {
		t.Errorf("rotating an unknown webhook: %v, want ErrNotFound", err)
	}
}

// testRegionEvents: a region's insert and each change of its status,
// however written, is a region.changed event with the region's names.
func testRegionEvents(t *testing.T, s WebhookStore) {
	ctx := t.Context()
	w := addHook(t, s, Hook(0, cdnapi.EventRegionChanged))
	r := Regions()[0]
	if err := Writer(s).PutRegions(ctx, []cdnapi.Region{r}); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordStatusChange(ctx, cdnapi.StatusChange{Kind: cdnapi.SubjectRegion, Subject: r.Code,
		Status: cdnapi.StatusPartialOutage, Source: cdnapi.SourceProbe, At: Epoch}); err != nil {
		t.Fatal(err)
	}
	// A component's change is no region event, and an incident event is
	// not for this webhook.
	if err := s.UpdateIncident(ctx, cdnapi.IncidentUpdate{Component: "API", Status: cdnapi.StatusMajorOutage, At: Epoch}); err != nil {
		t.Fatal(err)
	}
	ds := claimAll(t, s, w)
	if len(ds) != 2 {
		t.Fatalf("claimed %+v, want 2 region events", ds)
	}
	for i, status := range []cdnapi.Status{r.Status, cdnapi.StatusPartialOutage} {
		g := ds[i].Event.Region
		if ds[i].Event.Type != cdnapi.EventRegionChanged || g == nil || g.Code != r.Code || g.Name != r.Name ||
			g.Zone != r.Zone || g.Country != r.Country || g.Status != status {
			t.Errorf("event %d = %+v %+v, want %s in %s", i, ds[i].Event, g, r.Code, status)
		}
	}
}

// testClaimLeaseRetry: a claimed delivery is not claimed again within its
// lease, is after it, counts its attempts, and a failure makes it due
// after retryIn; delivered ends it.
func testClaimLeaseRetry(t *testing.T, s WebhookStore) {
	ctx := t.Context()
	w := addHook(t, s, Hook(0))
	if err := s.UpdateIncident(ctx, cdnapi.IncidentUpdate{Component: "API", Status: cdnapi.StatusMajorOutage, At: Epoch}); err != nil {
		t.Fatal(err)
	}
	ds, err := s.ClaimDeliveries(ctx, w.ID, 10, 300*time.Millisecond)
	if err != nil || len(ds) != 1 {
		t.Fatalf("claim = %+v, %v", ds, err)
	}
	if again := claimAll(t, s, w); len(again) != 0 {
		t.Fatalf("claimed again within the lease: %+v", again)
	}
	st, err := s.OutboxStats(ctx)
	if err != nil || st.Pending != 1 || st.OldestQueued.IsZero() || time.Since(st.OldestQueued) > time.Minute {
		t.Errorf("OutboxStats = %+v, %v; want 1 pending, queued just now", st, err)
	}
	time.Sleep(400 * time.Millisecond)
	ds2 := claimAll(t, s, w)
	if len(ds2) != 1 || ds2[0].Attempt != 2 || ds2[0].Event.ID != ds[0].Event.ID {
		t.Fatalf("after the lease: %+v, want attempt 2 of the same event", ds2)
	}
	// The first claim's late failure must not reschedule the second's.
	finish(t, s, ds[0], cdnapi.DeliveryFailed, 0)
	if again := claimAll(t, s, w); len(again) != 0 {
		t.Fatalf("a stale claim's failure made the delivery due: %+v", again)
	}
	finish(t, s, ds2[0], cdnapi.DeliveryFailed, 0)
	ds3 := claimAll(t, s, w)
	if len(ds3) != 1 || ds3[0].Attempt != 3 {
		t.Fatalf("after a failure with retryIn 0: %+v, want attempt 3", ds3)
	}
	finish(t, s, ds3[0], cdnapi.DeliveryFailed, time.Hour)
	if again := claimAll(t, s, w); len(again) != 0 {
		t.Fatalf("due before retryIn: %+v", again)
	}
	finish(t, s, ds3[0], cdnapi.DeliveryDelivered, 0)
	if st, err := s.OutboxStats(ctx); err != nil || st.Pending != 0 || !st.OldestQueued.IsZero() {
		t.Errorf("after delivery: %+v, %v; want nothing pending", st, err)
	}
	got, err := s.DeliveryAttempts(ctx, w.ID, 10)
	if err != nil || len(got) != 4 {
		t.Fatalf("DeliveryAttempts = %+v, %v; want 4", got, err)
	}
	if got[0].Result != cdnapi.DeliveryDelivered || got[0].Attempt != 3 || got[3].Attempt != 1 ||
		got[0].EventID != ds[0].Event.ID || got[0].EventType != cdnapi.EventIncidentOpened ||
		got[0].StatusCode != 500 || got[0].Latency != 1500*time.Microsecond {
		t.Errorf("DeliveryAttempts = %+v", got)
	}
	if other, _ := s.DeliveryAttempts(ctx, "wh_other", 10); len(other) != 0 {
		t.Errorf("attempts of another webhook: %+v", other)
	}
	if every, _ := s.DeliveryAttempts(ctx, "", 2); len(every) != 2 {
		t.Errorf("DeliveryAttempts(\"\", 2) = %d attempts", len(every))
	}
}

// testGoneRemovesWebhook: a 410 removes the webhook and what waits for it.
func testGoneRemovesWebhook(t *testing.T, s WebhookStore) {
	ctx := t.Context()
	w := addHook(t, s, Hook(0))
	other := addHook(t, s, Hook(1))
	for _, c := range []string{"API", "Storage"} {
		if err := s.UpdateIncident(ctx, cdnapi.IncidentUpdate{Component: c, Status: cdnapi.StatusMajorOutage, At: Epoch}); err != nil {
			t.Fatal(err)
		}
	}
	ds, err := s.ClaimDeliveries(ctx, w.ID, 1, time.Hour)
	if err != nil || len(ds) != 1 {
		t.Fatalf("claim = %+v, %v", ds, err)
	}
	finish(t, s, ds[0], cdnapi.DeliveryGone, 0)
	hooks, _ := s.Webhooks(ctx)
	if len(hooks) != 1 || hooks[0].ID != other.ID {
		t.Errorf("after 410: webhooks %+v, want only the other", hooks)
	}
	if st, _ := s.OutboxStats(ctx); st.Pending != 2 {
		t.Errorf("pending = %d, want the other's 2", st.Pending)
	}
	if a, _ := s.DeliveryAttempts(ctx, w.ID, 10); len(a) != 1 || a[0].Result != cdnapi.DeliveryGone {
		t.Errorf("the removed webhook's attempts: %+v", a)
	}
}

// testDeleteEventsBefore: old events go once nothing waits for them.
func testDeleteEventsBefore(t *testing.T, s WebhookStore) {
	ctx := t.Context()
	w := addHook(t, s, Hook(0))
	if err := s.UpdateIncident(ctx, cdnapi.IncidentUpdate{Component: "API", Status: cdnapi.StatusMajorOutage, At: Epoch}); err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Hour)
	if n, err := s.DeleteEventsBefore(ctx, future, 100); err != nil || n != 0 {
		t.Errorf("DeleteEventsBefore with a delivery waiting = %d, %v; want 0", n, err)
	}
	ds := claimAll(t, s, w)
	finish(t, s, ds[0], cdnapi.DeliveryDelivered, 0)
	if n, err := s.DeleteEventsBefore(ctx, time.Now().Add(-time.Hour), 100); err != nil || n != 0 {
		t.Errorf("DeleteEventsBefore an hour ago = %d, %v; want 0", n, err)
	}
	if n, err := s.DeleteEventsBefore(ctx, future, 100); err != nil || n != 2 {
		t.Errorf("DeleteEventsBefore = %d, %v; want the event and its attempt", n, err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
