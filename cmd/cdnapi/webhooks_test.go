package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/demo"
	"github.com/cdnapi/cdnapi/internal/pgtest"
)

// hookReceiver is a webhook receiver as its owner would write one: it
// verifies each request by the Standard Webhooks specification (written
// here from the specification, not from our signer), answers with the
// status code fail says, and deduplicates accepted events by webhook-id.
type hookReceiver struct {
	*httptest.Server
	secret string

	mu       sync.Mutex
	fail     int // the status code to answer with; 0: 200
	hang     bool
	requests int
	bad      []string
	accepted map[string]int // event id -> times accepted
	events   []hookEvent    // the accepted events, in order, once each
	arrived  chan struct{}  // signalled on every accepted event
}

type hookEvent struct {
	ID, Type string
	Data     struct {
		ID, Component, Status string
		ResolvedAt            *string `json:"resolved_at"`
		Code                  string
		// file.quarantined
		Project, Path, Checksum, Signature string
	}
	at time.Time
}

func newHookReceiver(t *testing.T) *hookReceiver {
	r := &hookReceiver{accepted: map[string]int{}, arrived: make(chan struct{}, 1000)}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.Close)
	return r
}

func (r *hookReceiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.requests++
	if r.hang {
		r.mu.Unlock()
		<-req.Context().Done()
		return
	}
	defer r.mu.Unlock()
	if err := verifyStandardWebhook(r.secret, req.Header, body); err != nil {
		r.bad = append(r.bad, err.Error())
		w.WriteHeader(400)
		return
	}
	if r.fail != 0 {
		w.WriteHeader(r.fail)
		return
	}
	id := req.Header.Get("webhook-id")
	r.accepted[id]++
	if r.accepted[id] == 1 {
		var e hookEvent
		if err := json.Unmarshal(body, &e); err != nil || e.ID != id {
			r.bad = append(r.bad, fmt.Sprintf("body %s: %v", body, err))
		}
		e.at = time.Now()
		r.events = append(r.events, e)
		r.arrived <- struct{}{}
	}
	w.WriteHeader(200)
}

// verifyStandardWebhook: the secret is the base64 after "whsec_"; the
// signed content is "<webhook-id>.<webhook-timestamp>.<body>";
// webhook-signature holds space-separated "v1,<base64 HMAC-SHA256>"; the
// timestamp must be within 5 minutes.
func verifyStandardWebhook(secret string, h http.Header, body []byte) error {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || !strings.HasPrefix(secret, "whsec_") {
		return fmt.Errorf("secret %q", secret)
	}
	id, ts := h.Get("webhook-id"), h.Get("webhook-timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || id == "" || time.Since(time.Unix(sec, 0)).Abs() > 5*time.Minute {
		return fmt.Errorf("webhook-id %q, webhook-timestamp %q", id, ts)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "." + string(body)))
	for _, sig := range strings.Fields(h.Get("webhook-signature")) {
		if v, enc, _ := strings.Cut(sig, ","); v == "v1" {
			if got, err := base64.StdEncoding.DecodeString(enc); err == nil && hmac.Equal(got, mac.Sum(nil)) {
				return nil
			}
		}
	}
	return fmt.Errorf("no valid signature in %q", h.Get("webhook-signature"))
}

func (r *hookReceiver) set(fail int, hang bool) {
	r.mu.Lock()
	r.fail, r.hang = fail, hang
	r.mu.Unlock()
}

// snapshot returns the accepted events and the requests so far.
func (r *hookReceiver) snapshot() ([]hookEvent, map[string]int, int, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	acc := map[string]int{}
	for k, v := range r.accepted {
		acc[k] = v
	}
	return slices.Clone(r.events), acc, r.requests, slices.Clone(r.bad)
}

// waitEvent waits for an accepted event of type typ and returns it.
func (r *hookReceiver) waitEvent(t *testing.T, typ string, within time.Duration) hookEvent {
	t.Helper()
	deadline := time.After(within)
	for {
		events, _, _, _ := r.snapshot()
		for _, e := range events {
			if e.Type == typ {
				return e
			}
		}
		select {
		case <-r.arrived:
		case <-deadline:
			t.Fatalf("no %s within %v; the receiver has %+v", typ, within, events)
		}
	}
}

// addHook runs `webhooks add` for r on db and keeps the secret it prints.
// The receiver is on loopback, which serve reaches with
// --webhook-allow-private in these tests: add is told so too.
func addHook(t *testing.T, r *hookReceiver, db string, args ...string) string {
	t.Helper()
	out, _ := mustRunCmd(t, "", append([]string{"webhooks", "add", r.URL + "/hooks?token=t0p", "--webhook-allow-private", "--db", db}, args...)...)
	var id string
	for _, line := range strings.Split(out, "\n") {
		k, v, _ := strings.Cut(line, " ")
		switch k {
		case "secret":
			r.secret = strings.TrimSpace(v)
		case "id":
			id = strings.TrimSpace(v)
		}
	}
	if r.secret == "" || id == "" {
		t.Fatalf("webhooks add printed %q", out)
	}
	return id
}

// webhookServeFlags make serve deliver at once, to loopback.
var webhookServeFlags = []string{"--webhook-allow-private", "--webhook-poll", "50ms",
	"--webhook-retry-min", "100ms", "--webhook-retry-max", "200ms", "--webhook-timeout", "2s"}

// TestWebhookOfAStoppedStore: serve over a PostgreSQL primary and a read
// replica, which its storage probe reads. When the replica stops (reads go
// on from the primary alone: Storage degraded_performance), the receiver
// gets incident.opened for Storage within two probe intervals;
// when it is back, incident.resolved. Both are signed by the Standard
// Webhooks algorithm, and each arrives once.
func TestWebhookOfAStoppedStore(t *testing.T) {
	setup := time.Now()
	primary := pgtest.Start(t) // our own clusters: this test stops the replica
	replica := primary.StartReplica(t)
	dbname := replica.CreateDatabase(t)
	primaryDSN, replicaDSN := primary.DSN(dbname), replica.DSN(dbname)
	mustRunCmd(t, "", "migrate", "--db", primaryDSN)
	// The replica must hold the schema before serve's first probe reads it,
	// or Storage opens an incident of its own before the replica stops.
	if err := replica.WaitReplay(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Logf("two clusters and a database in %v", time.Since(setup).Round(time.Millisecond))
	r := newHookReceiver(t)
	addHook(t, r, primaryDSN, "--events", "incident.opened,incident.resolved")
	const interval = 500 * time.Millisecond
	s := startServe(t, nil, append([]string{"--db", primaryDSN, "--db-read", replicaDSN,
		"--status-interval", interval.String()}, webhookServeFlags...)...)
	// A healthy round first, awaited rather than slept for: Storage reads
	// operational through the replica.
	eventually(t, "Storage operational before the replica stops", func() error {
		return wantComponent(s.api, cdnapi.ComponentStorage, cdnapi.StatusOperational)
	})

	began := time.Now()
	stopped := began // measured from the start of the stop: probes fail from then on
	rounds := countRounds(t, s.admin)
	if err := replica.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("the replica took %v to stop", time.Since(began).Round(time.Millisecond))
	// The incident opens within a few rounds: counted once the incidents
	// list shows it, not once the webhook arrives, whose delivery is not
	// a round's work.
	eventually(t, "an open Storage incident", func() error { return wantOpenIncident(s.api, cdnapi.ComponentStorage) })
	n := rounds()
	opened := r.waitEvent(t, "incident.opened", 60*time.Second)
	took := opened.at.Sub(stopped)
	t.Logf("the incident opened %d evaluation rounds after the replica stopped (probe interval %v); incident.opened arrived after %v",
		n, interval, took.Round(time.Millisecond))
	if opened.Data.Component != "Storage" || opened.Data.Status != "degraded_performance" || opened.Data.ResolvedAt != nil {
		t.Errorf("opened: %+v", opened)
	}
	// Two rounds open an incident (health.OpenAfter); the round in
	// progress when the replica stopped, and one that ends before the poll
	// sees the incident, may add one each: four at most. Counted in
	// rounds, not seconds, so that a loaded machine, which stretches the
	// rounds, does not fail it.
	if n > 4 {
		t.Errorf("the incident took %d evaluation rounds to open, want two (and one each side)", n)
	}

	restarting := time.Now()
	if err := replica.Restart(); err != nil {
		t.Fatal(err)
	}
	resolved := r.waitEvent(t, "incident.resolved", 20*time.Second)
	t.Logf("incident.resolved arrived %v after the replica's restart began", resolved.at.Sub(restarting).Round(time.Millisecond))
	if resolved.Data.ID != opened.Data.ID || resolved.Data.ResolvedAt == nil {
		t.Errorf("resolved %+v, want the opened incident %s with resolved_at", resolved, opened.Data.ID)
	}
	time.Sleep(200 * time.Millisecond)
	events, accepted, _, bad := r.snapshot()
	if len(bad) > 0 {
		t.Errorf("the receiver refused: %v", bad)
	}
	for id, n := range accepted {
		if n != 1 {
			t.Errorf("event %s accepted %d times", id, n)
		}
	}
	if len(events) != 2 {
		t.Errorf("events %+v, want opened and resolved only", events)
	}
}

// regionsNDJSON is the demo regions, all with status.
func regionsNDJSON(t *testing.T, status string) string {
	var recs []map[string]any
	for _, r := range demo.Regions() {
		rec := regionRecord(r)
		rec["status"] = status
		recs = append(recs, rec)
	}
	return ndjsonLines(t, recs)
}

// TestWebhookRetriesAcrossKill: the receiver answers 500 while serve runs;
// serve is killed with SIGKILL after the changes and their failed
// attempts; once the receiver answers 200, a new serve delivers every
// event exactly once, and the log counts every attempt of both.
func TestWebhookRetriesAcrossKill(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "hooks.db")
	mustRunCmd(t, "", "migrate", "--db", db)
	r := newHookReceiver(t)
	id := addHook(t, r, db)
	r.set(500, false)
	procs := startChildren(t, 1, append([]string{"--db", db}, webhookServeFlags...)...)
	// The changes: twelve regions written by ingest, and an incident that
	// serve's own evaluator opens for an operator's status.
	mustRunCmd(t, regionsNDJSON(t, "operational"), "ingest", "regions", "--db", db)
	mustRunCmd(t, "", "status", "set", "Upload Service", "major_outage", "--db", db)
	want := len(demo.Regions()) + 1
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, _, requests, _ := r.snapshot()
		if requests >= 2*want { // every event tried, some twice
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d attempts within 10s", requests)
		}
		time.Sleep(20 * time.Millisecond)
	}
	procs[0].cmd.Process.Kill()
	err := <-procs[0].done
	procs[0].done <- err // for startChildren's cleanup
	_, _, failedRequests, _ := r.snapshot()

	r.set(0, false)
	startChildren(t, 1, append([]string{"--db", db}, webhookServeFlags...)...)
	deadline = time.Now().Add(10 * time.Second)
	for {
		events, _, _, _ := r.snapshot()
		if len(events) >= want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d events delivered within 10s of the restart", len(events), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // a duplicate would come now
	events, accepted, requests, bad := r.snapshot()
	if len(bad) > 0 {
		t.Errorf("the receiver refused: %v", bad)
	}
	types := map[string]int{}
	for _, e := range events {
		types[e.Type]++
	}
	if types["region.changed"] != len(demo.Regions()) || types["incident.opened"] != 1 || len(events) != want {
		t.Errorf("events by type %v, want %d region.changed and 1 incident.opened", types, len(demo.Regions()))
	}
	for id, n := range accepted {
		if n != 1 {
			t.Errorf("event %s accepted %d times, want once", id, n)
		}
	}
	out, _ := mustRunCmd(t, "", "webhooks", "deliveries", id, "--limit", "1000", "--db", db)
	lines := strings.Split(strings.TrimSpace(out), "\n")[1:]
	var failed, delivered int
	for _, l := range lines {
		switch f := strings.Fields(l); f[5] {
		case "failed":
			failed++
		case "delivered":
			delivered++
		}
	}
	// The killed process may have had attempts in flight whose answer it
	// never recorded: those lie between the log and the receiver's count.
	t.Logf("%d requests answered 500 before the kill, %d logged failed; %d delivered of %d requests after", failedRequests, failed, delivered, requests-failedRequests)
	if delivered != want || requests-failedRequests != want {
		t.Errorf("%d delivered attempts logged and %d requests after the restart; want %d of each", delivered, requests-failedRequests, want)
	}
	if failed < failedRequests-4 || failed > failedRequests {
		t.Errorf("%d failed attempts logged, the receiver answered %d with 500", failed, failedRequests)
	}
}

// TestWebhooksOnTwoProcesses: two serve processes over one PostgreSQL
// deliver each of many events once between them.
func TestWebhooksOnTwoProcesses(t *testing.T) {
	db := pgtest.NewDatabase(t)
	mustRunCmd(t, "", "migrate", "--db", db)
	r := newHookReceiver(t)
	addHook(t, r, db, "--events", "region.changed")
	startChildren(t, 2, append([]string{"--db", db}, webhookServeFlags...)...)
	statuses := []string{"operational", "degraded_performance", "partial_outage", "major_outage", "operational"}
	for _, s := range statuses {
		mustRunCmd(t, regionsNDJSON(t, s), "ingest", "regions", "--db", db)
	}
	want := len(demo.Regions()) * len(statuses)
	deadline := time.Now().Add(15 * time.Second)
	for {
		events, _, _, _ := r.snapshot()
		if len(events) >= want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d events delivered within 15s", len(events), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // a duplicate would come now
	events, accepted, requests, bad := r.snapshot()
	if len(bad) > 0 {
		t.Errorf("the receiver refused: %v", bad)
	}
	if len(events) != want || requests != want {
		t.Errorf("%d events in %d requests, want %d in as many", len(events), requests, want)
	}
	for id, n := range accepted {
		if n != 1 {
			t.Errorf("event %s accepted %d times, want once", id, n)
		}
	}
}

// TestHangingWebhook: while one receiver hangs, GET /api/v1/status answers
// as fast as before and another receiver gets every event.
func TestHangingWebhook(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "hooks.db")
	mustRunCmd(t, "", "migrate", "--db", db)
	hanging, fine := newHookReceiver(t), newHookReceiver(t)
	addHook(t, hanging, db)
	addHook(t, fine, db)
	hanging.set(0, true)
	// A timeout longer than the working receiver needs: a delivery that
	// waited for the hanging receiver's attempts would take at least this.
	const timeout = 5 * time.Second
	s := startServe(t, nil, append(append([]string{"--db", db}, webhookServeFlags...), "--webhook-timeout", timeout.String())...)
	measure := func() (p50, most time.Duration) {
		var took []time.Duration
		for range 200 {
			start := time.Now()
			res, err := http.Get(s.api + "/api/v1/status")
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			took = append(took, time.Since(start))
		}
		slices.Sort(took)
		return took[len(took)/2], took[len(took)-1]
	}
	before50, beforeMax := measure()
	mustRunCmd(t, regionsNDJSON(t, "operational"), "ingest", "regions", "--db", db)
	began := time.Now()
	for {
		events, _, _, _ := fine.snapshot()
		_, _, hung, _ := hanging.snapshot()
		if len(events) == len(demo.Regions()) && hung > 0 {
			break
		}
		if time.Since(began) > 10*time.Second {
			t.Fatalf("the working receiver got %d of %d events within 10s (the hanging one %d requests)", len(events), len(demo.Regions()), hung)
		}
		time.Sleep(10 * time.Millisecond)
	}
	took := time.Since(began)
	t.Logf("%d events reached the working receiver in %v while the other hangs", len(demo.Regions()), took.Round(time.Millisecond))
	if took >= timeout {
		t.Errorf("the working receiver got its events after %v, not before the hanging receiver's first timeout (%v)", took, timeout)
	}
	during50, duringMax := measure()
	_, _, hung, _ := hanging.snapshot()
	t.Logf("GET /api/v1/status, 200 each: p50 %v max %v with no deliveries; p50 %v max %v while %d requests to a hanging receiver were open",
		before50, beforeMax, during50, duringMax, hung)
	// Nothing of the status waits for a delivery: no answer comes near
	// the webhook timeout (2s) that a wait would show.
	if duringMax > time.Second {
		t.Errorf("GET /api/v1/status took up to %v while a receiver hung", duringMax)
	}

	// The metrics: the working receiver's deliveries, and the hanging
	// one's waiting (the gauges are read from the store once a second).
	want := map[string]func(float64) bool{
		`cdnapi_webhook_deliveries_total{result="delivered"}`: func(v float64) bool { return v == float64(len(demo.Regions())) },
		`cdnapi_webhook_pending`:                              func(v float64) bool { return v == float64(len(demo.Regions())) },
		`cdnapi_webhook_oldest_pending_age_seconds`:           func(v float64) bool { return v > 0 && v < 60 },
	}
	var text string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		res, err := http.Get(s.admin + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		text = string(b)
		ok := true
		for name, good := range want {
			v, found := metricValue(text, name)
			ok = ok && found && good(v)
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			for name := range want {
				v, found := metricValue(text, name)
				t.Errorf("%s = %v (found %v)", name, v, found)
			}
			break
		}
	}
}

// metricValue returns the value of the series named exactly name (with its
// labels) in Prometheus text.
func metricValue(text, name string) (float64, bool) {
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v, err == nil
		}
	}
	return 0, false
}

// TestWebhooksCommand: add, list, remove and their errors.
func TestWebhooksCommand(t *testing.T) {
	db := migratedDB(t, "cli.db")
	secretFile := filepath.Join(t.TempDir(), "secret")
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	os.WriteFile(secretFile, []byte(secret+"\n"), 0o600)
	out, _ := mustRunCmd(t, "", "webhooks", "add", "https://hooks.example.com/in", "--events", "incident.resolved",
		"--secret-file", secretFile, "--db", db)
	if !strings.Contains(out, "secret  "+secret) || !strings.Contains(out, "events  incident.resolved\n") {
		t.Errorf("add printed %q", out)
	}
	id := strings.Fields(out)[1]
	list, _ := mustRunCmd(t, "", "webhooks", "list", "--db", db)
	if !strings.Contains(list, id) || !strings.Contains(list, "https://hooks.example.com/in") || strings.Contains(list, "whsec_") {
		t.Errorf("list printed %q: want the webhook, never its secret", list)
	}
	for _, bad := range [][]string{
		{"add", "ftp://x.example.com/"},
		{"add", "https://user:pw@x.example.com/"},
		{"add", "https://x.example.com/", "--events", "incident.exploded"},
		{"remove", "key_123"},
		{"deliveries", "--limit", "0"},
		{"rotate-secret", "key_123"},
		{"rotate-secret", id, "--grace", "-1s"},
		{"rotate-secret", id, "--grace", "800h"},
		{"frobnicate"},
	} {
		if _, _, err := runCmd(t, "", append(append([]string{"webhooks"}, bad...), "--db", db)...); err == nil || !strings.Contains(err.Error(), "webhooks") {
			t.Errorf("webhooks %v: %v, want a usage error", bad, err)
		}
	}
	out, _ = mustRunCmd(t, "", "webhooks", "rotate-secret", id, "--grace", "0", "--db", db)
	if !strings.Contains(out, "old     no longer signs") || strings.Contains(out, secret) {
		t.Errorf("rotate-secret --grace 0 printed %q", out)
	}
	mustRunCmd(t, "", "webhooks", "remove", id, "--db", db)
	if _, _, err := runCmd(t, "", "webhooks", "rotate-secret", id, "--db", db); err == nil || !strings.Contains(err.Error(), "there is no webhook") {
		t.Errorf("rotating a removed webhook: %v", err)
	}
	if _, _, err := runCmd(t, "", "webhooks", "remove", id, "--db", db); err == nil || !strings.Contains(err.Error(), "there is no webhook") {
		t.Errorf("second remove: %v", err)
	}
}

// TestWebhooksAddChecksTarget is issue 36's: add refuses the targets that
// serve's deliveries refuse, unless --webhook-allow-private, and a numeric
// spelling of an address always; nothing refused is stored.
func TestWebhooksAddChecksTarget(t *testing.T) {
	db := migratedDB(t, "targets.db")
	for _, tc := range []struct {
		url   string
		allow bool
		ok    bool
	}{
		{"http://127.0.0.1:9/in", false, false},
		{"http://[::1]/in", false, false},
		{"http://10.0.0.7/in", false, false},
		{"http://169.254.169.254/latest/meta-data", false, false},
		{"http://localhost/in", false, false},
		{"http://localhost./in", false, false},
		{"http://0x7f000001/in", false, false},
		{"http://2130706433/in", false, false},
		{"http://127.1/in", false, false},
		{"http://0x7f000001/in", true, false},
		{"http://127.1/in", true, false},
		{"http://127.0.0.1:9/in", true, true},
		{"http://localhost./in", true, true},
		{"http://93.184.216.34/in", false, true},
	} {
		args := []string{"webhooks", "add", tc.url, "--db", db}
		if tc.allow {
			args = append(args, "--webhook-allow-private")
		}
		_, _, err := runCmd(t, "", args...)
		if tc.ok && err != nil {
			t.Errorf("%v: %v, want it added", args, err)
		}
		if !tc.ok && (err == nil || !strings.Contains(err.Error(), "webhooks add: ")) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
	list, _ := mustRunCmd(t, "", "webhooks", "list", "--db", db)
	if n := strings.Count(list, "wh_"); n != 3 {
		t.Errorf("list after the adds:\n%s\nwant the 3 accepted", list)
	}
}

// wantComponent checks a component's status in the status document of the
// API at api.
func wantComponent(api, name string, want cdnapi.Status) error {
	res, err := http.Get(api + "/api/v1/status")
	if err != nil {
		return err
	}
	defer res.Body.Close()
	var doc struct {
		Components []struct {
			Name   string
			Status cdnapi.Status
		}
	}
	if err := json.NewDecoder(res.Body).Decode(&doc); err != nil {
		return err
	}
	for _, c := range doc.Components {
		if c.Name == name {
			if c.Status != want {
				return fmt.Errorf("%s is %s, want %s", name, c.Status, want)
			}
			return nil
		}
	}
	return fmt.Errorf("no component %s", name)
}

// wantOpenIncident checks that the incidents list of the API at api shows
// an open incident of component.
func wantOpenIncident(api, component string) error {
	res, err := http.Get(api + "/api/v1/status/incidents")
	if err != nil {
		return err
	}
	defer res.Body.Close()
	var list struct {
		Data []struct {
			Component  string  `json:"component"`
			ResolvedAt *string `json:"resolved_at"`
		} `json:"data"`
	}
	if err := json.NewDecoder(res.Body).Decode(&list); err != nil {
		return err
	}
	for _, inc := range list.Data {
		if inc.Component == component && inc.ResolvedAt == nil {
			return nil
		}
	}
	return fmt.Errorf("no open incident of %s among %d", component, len(list.Data))
}
