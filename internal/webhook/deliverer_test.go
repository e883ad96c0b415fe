package webhook

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/sqlite"
)

// verify checks a request as the Standard Webhooks specification tells a
// receiver to, written from the specification and not from Signature: the
// secret is the base64 after "whsec_"; the signed content is
// "<webhook-id>.<webhook-timestamp>.<body>"; webhook-signature holds
// space-separated "v1,<base64 HMAC-SHA256>" values, any of which may match;
// the timestamp must be within 5 minutes of now.
func verify(secret string, h http.Header, body []byte) error {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return err
	}
	id, ts := h.Get("webhook-id"), h.Get("webhook-timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || id == "" {
		return fmt.Errorf("missing or bad webhook-id %q / webhook-timestamp %q", id, ts)
	}
	if d := time.Since(time.Unix(sec, 0)); d > 5*time.Minute || d < -5*time.Minute {
		return fmt.Errorf("timestamp %s is too far from now", ts)
	}
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s.%s.%s", id, ts, body)
	want := mac.Sum(nil)
	for _, sig := range strings.Fields(h.Get("webhook-signature")) {
		version, enc, ok := strings.Cut(sig, ",")
		got, err := base64.StdEncoding.DecodeString(enc)
		if ok && version == "v1" && err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return fmt.Errorf("no signature matches: %q", h.Get("webhook-signature"))
}

// TestSignatureVector reproduces the test vector the Standard Webhooks
// reference libraries check, so that their verifiers accept ours.
func TestSignatureVector(t *testing.T) {
	key, err := cdnapi.WebhookSecretKey("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		t.Fatal(err)
	}
	got := Signature(key, "msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Errorf("Signature = %s, want %s", got, want)
	}
}

// receiver is an httptest server that records what it is sent, verifies
// each request and deduplicates by webhook-id, as a receiver should.
type receiver struct {
	*httptest.Server
	secret string
	answer func(n int) int // the status code of the nth request, from 1

	mu       sync.Mutex
	requests int
	bad      []string
	accepted map[string]int // event id -> 2xx answers given for it
	bodies   map[string]map[string]any
	order    []string // event ids in the order first accepted
}

func newReceiver(t *testing.T, answer func(n int) int) *receiver {
	r := &receiver{answer: answer, accepted: map[string]int{}, bodies: map[string]map[string]any{}}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests++
	if err := verify(r.secret, req.Header, body); err != nil || req.Method != http.MethodPost ||
		req.Header.Get("Content-Type") != "application/json" {
		r.bad = append(r.bad, fmt.Sprintf("%s %v", req.Method, err))
		w.WriteHeader(400)
		return
	}
	code := r.answer(r.requests)
	if code/100 == 2 {
		id := req.Header.Get("webhook-id")
		if r.accepted[id] == 0 {
			r.order = append(r.order, id)
			var m map[string]any
			json.Unmarshal(body, &m)
			r.bodies[id] = m
		}
		r.accepted[id]++
	}
	w.WriteHeader(code)
}

func (r *receiver) snapshot() (accepted map[string]int, order []string, bad []string, requests int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	accepted = map[string]int{}
	for k, v := range r.accepted {
		accepted[k] = v
	}
	return accepted, append([]string(nil), r.order...), append([]string(nil), r.bad...), r.requests
}

func openStore(t *testing.T) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "hooks.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	return s
}

func subscribe(t *testing.T, s *sqlite.Store, r *receiver, types ...cdnapi.EventType) cdnapi.Webhook {
	t.Helper()
	if len(types) == 0 {
		types = cdnapi.EventTypes
	}
	w := cdnapi.Webhook{ID: cdnapi.NewWebhookID(), URL: r.URL + "/hook?token=abc", Secret: cdnapi.NewWebhookSecret(),
		Events: types, CreatedAt: time.Now()}
	if r.secret == "" {
		r.secret = w.Secret
	}
	if err := s.AddWebhook(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	return w
}

// testConfig delivers quickly, to loopback.
func testConfig() Config {
	return Config{Timeout: 2 * time.Second, Poll: 20 * time.Millisecond, RetryMin: 20 * time.Millisecond,
		RetryMax: 100 * time.Millisecond, AllowPrivate: true}
}

func start(t *testing.T, s cdnapi.WebhookStore, cfg Config) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { New(s, cfg).Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

func waitFor(t *testing.T, what string, within time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v", what, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func incident(t *testing.T, s *sqlite.Store, component string, status cdnapi.Status) {
	t.Helper()
	if err := s.UpdateIncident(t.Context(), cdnapi.IncidentUpdate{Component: component, Status: status, At: time.Now()}); err != nil {
		t.Fatal(err)
	}
}

// TestRetriesUntilAccepted: a receiver that answers 500 to its first three
// requests, then 200, gets each event exactly once accepted, with a valid
// signature and the payload of the OpenAPI document; our log counts every
// attempt.
func TestRetriesUntilAccepted(t *testing.T) {
	s := openStore(t)
	r := newReceiver(t, func(n int) int {
		if n <= 3 {
			return 500
		}
		return 200
	})
	w := subscribe(t, s, r)
	incident(t, s, cdnapi.ComponentStorage, cdnapi.StatusMajorOutage)
	incident(t, s, cdnapi.ComponentStorage, cdnapi.StatusOperational)
	m := NewMetrics(prometheus.NewRegistry())
	cfg := testConfig()
	cfg.Metrics = m
	start(t, s, cfg)
	waitFor(t, "two accepted events", 5*time.Second, func() bool { a, _, _, _ := r.snapshot(); return len(a) == 2 })
	time.Sleep(100 * time.Millisecond) // anything sent twice would arrive now
	accepted, order, bad, requests := r.snapshot()
	if len(bad) > 0 {
		t.Fatalf("requests the receiver refused: %v", bad)
	}
	for id, n := range accepted {
		if n != 1 {
			t.Errorf("event %s accepted %d times, want once", id, n)
		}
	}
	attempts, err := s.DeliveryAttempts(t.Context(), w.ID, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(attempts) != requests || requests != 5 {
		t.Errorf("%d attempts logged, %d requests received; want 5 of each (3 failed, 2 delivered)", len(attempts), requests)
	}
	var failed, delivered int
	for _, a := range attempts {
		if time.Since(a.At) > time.Minute || a.At.After(time.Now()) || a.Latency <= 0 {
			t.Errorf("attempt at %v took %v: want just now, and a positive latency", a.At, a.Latency)
		}
		switch a.Result {
		case cdnapi.DeliveryFailed:
			failed++
			if a.StatusCode != 500 {
				t.Errorf("failed attempt with status %d", a.StatusCode)
			}
		case cdnapi.DeliveryDelivered:
			delivered++
		}
	}
	if failed != 3 || delivered != 2 {
		t.Errorf("attempts: %d failed, %d delivered; want 3 and 2: %+v", failed, delivered, attempts)
	}
	if got := testutil.ToFloat64(m.attempts.WithLabelValues(string(cdnapi.DeliveryFailed))); got != 3 {
		t.Errorf("deliveries_total{result=failed} = %v, want 3", got)
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	first, second := r.bodies[order[0]], r.bodies[order[1]]
	types := []any{first["type"], second["type"]}
	if !(types[0] == "incident.opened" && types[1] == "incident.resolved") &&
		!(types[0] == "incident.resolved" && types[1] == "incident.opened") {
		t.Errorf("types %v, want opened and resolved", types)
	}
	for _, b := range []map[string]any{first, second} {
		data, _ := b["data"].(map[string]any)
		if b["id"] == nil || data["component"] != "Storage" || data["status"] != "major_outage" ||
			!strings.HasPrefix(fmt.Sprint(data["id"]), "inc_") {
			t.Errorf("payload %v", b)
		}
		if ts, _ := b["timestamp"].(string); !strings.HasSuffix(ts, "Z") || len(ts) != 20 {
			t.Errorf("timestamp %q", ts)
		}
	}
}

// TestGoneRemovesWebhook: a 410 ends the subscription.
func TestGoneRemovesWebhook(t *testing.T) {
	s := openStore(t)
	r := newReceiver(t, func(int) int { return http.StatusGone })
	subscribe(t, s, r)
	incident(t, s, "API", cdnapi.StatusMajorOutage)
	incident(t, s, "Storage", cdnapi.StatusMajorOutage)
	start(t, s, testConfig())
	waitFor(t, "the webhook's removal", 5*time.Second, func() bool { h, _ := s.Webhooks(t.Context()); return len(h) == 0 })
	if st, _ := s.OutboxStats(t.Context()); st.Pending != 0 {
		t.Errorf("%d deliveries still pending", st.Pending)
	}
}

// TestHangingReceiver: a receiver that never answers gets at most
// Concurrency requests at once, each cut at Timeout, and another receiver
// gets every event meanwhile.
func TestHangingReceiver(t *testing.T) {
	s := openStore(t)
	release := make(chan struct{})
	var open, most atomic.Int32
	hanging := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := open.Add(1)
		defer open.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(hanging.Close)
	t.Cleanup(func() { close(release) })
	fine := newReceiver(t, func(int) int { return 204 })
	subscribe(t, s, &receiver{Server: hanging, secret: "x"})
	subscribe(t, s, fine)
	const events = 20
	for i := range events {
		incident(t, s, fmt.Sprintf("Region X%03d", i), cdnapi.StatusMajorOutage)
	}
	cfg := testConfig()
	cfg.Concurrency = 2
	cfg.Timeout = 3 * time.Second
	began := time.Now()
	start(t, s, cfg)
	waitFor(t, "every event at the working receiver", 5*time.Second, func() bool { a, _, _, _ := fine.snapshot(); return len(a) == events })
	took := time.Since(began)
	t.Logf("%d events delivered to the working receiver in %v while the other hangs", events, took)
	// The working receiver waited for none of the hanging one's attempts:
	// every event reached it before the first of those timed out.
	if took >= cfg.Timeout {
		t.Fatalf("the working receiver got its events after %v, not before the hanging receiver's timeout (%v)", took, cfg.Timeout)
	}
	// Meanwhile the hanging receiver held exactly what it was allowed.
	// (After a timeout, a timed-out request's handler notices the closed
	// connection a little after its successor comes.)
	if m := most.Load(); m > int32(cfg.Concurrency) || m == 0 {
		t.Errorf("the hanging receiver had %d requests open at once, want 1 to %d", m, cfg.Concurrency)
	}
	time.Sleep(cfg.Timeout + 200*time.Millisecond) // the hanging ones time out and are retried
	var timeouts int
	all, _ := s.DeliveryAttempts(t.Context(), "", 1000)
	for _, a := range all {
		if a.Result == cdnapi.DeliveryFailed {
			if a.Error != "timeout" || a.Latency > 2*cfg.Timeout {
				t.Errorf("failed attempt %+v, want a timeout within %v", a, cfg.Timeout)
			}
			timeouts++
		}
	}
	if timeouts == 0 {
		t.Error("no attempt to the hanging receiver timed out")
	}
}

// TestGivesUpAfterRetryFor: a receiver that always answers 500 is retried
// until RetryFor has passed since the event, then the delivery is given up:
// logged and counted as gave_up, no longer pending, and not sent again.
func TestGivesUpAfterRetryFor(t *testing.T) {
	s := openStore(t)
	r := newReceiver(t, func(int) int { return 500 })
	w := subscribe(t, s, r)
	incident(t, s, "API", cdnapi.StatusMajorOutage)
	m := NewMetrics(prometheus.NewRegistry())
	cfg := testConfig()
	cfg.Metrics = m
	cfg.RetryFor = 500 * time.Millisecond
	start(t, s, cfg)
	waitFor(t, "delivery given up", 10*time.Second, func() bool {
		return testutil.ToFloat64(m.attempts.WithLabelValues(string(cdnapi.DeliveryGaveUp))) == 1
	})
	_, _, _, requests := r.snapshot()
	time.Sleep(10 * cfg.RetryMax) // a retry would come now
	if _, _, _, after := r.snapshot(); after != requests {
		t.Errorf("%d more requests after the delivery was given up", after-requests)
	}
	attempts, err := s.DeliveryAttempts(t.Context(), w.ID, 1000)
	if err != nil {
		t.Fatal(err)
	}
	// Newest first: the last attempt gave up, every one before it failed
	// and was retried.
	if len(attempts) != requests || len(attempts) < 3 || attempts[0].Result != cdnapi.DeliveryGaveUp || attempts[0].StatusCode != 500 {
		t.Fatalf("%d requests, attempts %+v; want at least 3, the last one gave_up", requests, attempts)
	}
	for _, a := range attempts[1:] {
		if a.Result != cdnapi.DeliveryFailed {
			t.Errorf("attempt %d: %s, want failed", a.Attempt, a.Result)
		}
	}
	if st, err := s.OutboxStats(t.Context()); err != nil || st.Pending != 0 {
		t.Errorf("outbox %+v (%v), want nothing pending", st, err)
	}
}

// TestRefusedTargets: by default a loopback target is refused without a
// connection, and a redirect to another host is not followed.
func TestRefusedTargets(t *testing.T) {
	t.Run("loopback", func(t *testing.T) {
		s := openStore(t)
		r := newReceiver(t, func(int) int { return 200 })
		w := subscribe(t, s, r)
		incident(t, s, "API", cdnapi.StatusMajorOutage)
		cfg := testConfig()
		cfg.AllowPrivate = false
		start(t, s, cfg)
		waitFor(t, "a refused attempt", 5*time.Second, func() bool {
			a, _ := s.DeliveryAttempts(t.Context(), w.ID, 1)
			return len(a) == 1
		})
		a, _ := s.DeliveryAttempts(t.Context(), w.ID, 1)
		if a[0].Result != cdnapi.DeliveryFailed || a[0].Error != "refused: private or loopback address" {
			t.Errorf("attempt %+v, want refused", a[0])
		}
		if _, _, _, n := r.snapshot(); n != 0 {
			t.Errorf("the loopback receiver got %d requests", n)
		}
	})
	t.Run("redirect to another host", func(t *testing.T) {
		s := openStore(t)
		other := newReceiver(t, func(int) int { return 200 })
		redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+"/hook", http.StatusTemporaryRedirect)
		}))
		t.Cleanup(redirector.Close)
		w := subscribe(t, s, &receiver{Server: redirector})
		incident(t, s, "API", cdnapi.StatusMajorOutage)
		start(t, s, testConfig())
		waitFor(t, "an attempt", 5*time.Second, func() bool {
			a, _ := s.DeliveryAttempts(t.Context(), w.ID, 1)
			return len(a) == 1
		})
		a, _ := s.DeliveryAttempts(t.Context(), w.ID, 1)
		if a[0].Result != cdnapi.DeliveryFailed || !strings.Contains(a[0].Error, "redirect to another host") ||
			strings.Contains(a[0].Error, "token=") {
			t.Errorf("attempt %+v, want a refused redirect, without the URL", a[0])
		}
		if _, _, _, n := other.snapshot(); n != 0 {
			t.Errorf("the other host got %d requests", n)
		}
	})
}

func TestBackoff(t *testing.T) {
	d := New(nil, Config{RetryMin: time.Second, RetryMax: time.Minute})
	for _, tt := range []struct {
		attempt int
		full    time.Duration
	}{{1, time.Second}, {2, 2 * time.Second}, {5, 16 * time.Second}, {7, time.Minute}, {80, time.Minute}} {
		for range 50 {
			if got := d.backoff(tt.attempt); got < tt.full/2 || got > tt.full {
				t.Fatalf("backoff(%d) = %v, want within [%v, %v]", tt.attempt, got, tt.full/2, tt.full)
			}
		}
	}
}

// TestQuarantineDelivered: a quarantine recorded twice under its
// QuarantineEventID (a scanner's retry after a crash) reaches a real
// receiver once, signed, with the file.quarantined payload; a webhook
// subscribed to status events only is not sent it.
func TestQuarantineDelivered(t *testing.T) {
	s := openStore(t)
	r := newReceiver(t, func(int) int { return 200 })
	subscribe(t, s, r, cdnapi.EventFileQuarantined)
	statusOnly := newReceiver(t, func(int) int { return 200 })
	subscribe(t, s, statusOnly, cdnapi.EventIncidentOpened, cdnapi.EventRegionChanged)
	q := cdnapi.Quarantine{Project: "acme", Path: "uploads/invoice.pdf.exe", Bytes: 68,
		Checksum:  "sha256:275a021bbfb6489e54d471899f7db9d1663fc695ec2fe2a2c4538aabf651fd0f",
		Signature: "Eicar-Test-Signature", At: time.Now().Add(-time.Second)}
	id := cdnapi.QuarantineEventID(q.Project, q.Path, q.Checksum)
	for range 2 {
		if err := s.RecordQuarantine(t.Context(), id, q); err != nil {
			t.Fatal(err)
		}
	}
	start(t, s, testConfig())
	waitFor(t, "the quarantine's delivery", 5*time.Second, func() bool { a, _, _, _ := r.snapshot(); return len(a) == 1 })
	time.Sleep(200 * time.Millisecond) // a second event or a resend would arrive now
	accepted, order, bad, requests := r.snapshot()
	if len(bad) > 0 || requests != 1 || accepted[id] != 1 || order[0] != id {
		t.Fatalf("receiver: %d requests, accepted %v, refused %v; want event %s once", requests, accepted, bad, id)
	}
	if _, _, _, n := statusOnly.snapshot(); n != 0 {
		t.Errorf("the status-only receiver got %d requests", n)
	}
	r.mu.Lock()
	body := r.bodies[id]
	r.mu.Unlock()
	want := map[string]any{
		"id": id, "type": "file.quarantined", "timestamp": body["timestamp"],
		"data": map[string]any{"project": "acme", "path": "uploads/invoice.pdf.exe", "bytes": float64(68),
			"checksum":  "sha256:275a021bbfb6489e54d471899f7db9d1663fc695ec2fe2a2c4538aabf651fd0f",
			"signature": "Eicar-Test-Signature", "quarantined_at": cdnapi.Timestamp(q.At)},
	}
	if !reflect.DeepEqual(body, want) {
		t.Errorf("payload %v\nwant    %v", body, want)
	}
	if ts, _ := body["timestamp"].(string); !strings.HasSuffix(ts, "Z") || len(ts) != 20 {
		t.Errorf("timestamp %q", ts)
	}
	if st, err := s.OutboxStats(t.Context()); err != nil || st.Pending != 0 {
		t.Errorf("outbox %+v (%v), want nothing pending", st, err)
	}
}

// TestRedirects: a same-host redirect is followed only when it keeps the
// POST and its body (307, 308). After a 301, 302 or 303 Go's client would
// send an empty GET, whose 200 would have been recorded as delivered and
// the event lost; instead the attempt fails with the redirect's status and
// is retried. One receiver per code: its first request is redirected to
// /moved, which accepts anything (as a careless receiver would), and any
// later request to the hook is accepted if it is a valid, signed POST.
func TestRedirects(t *testing.T) {
	for _, code := range []int{301, 302, 303, 307, 308} {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			s := openStore(t)
			var mu sync.Mutex
			var hookRequests int
			var moved []string // method and body length of each request to /moved
			r := newReceiver(t, func(int) int { return 200 })
			inner := r.Config.Handler
			r.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				if req.URL.Path == "/moved" {
					body, _ := io.ReadAll(req.Body)
					mu.Lock()
					moved = append(moved, fmt.Sprintf("%s %d", req.Method, len(body)))
					mu.Unlock()
					req.Body = io.NopCloser(strings.NewReader(string(body)))
					if req.Method == http.MethodPost {
						inner.ServeHTTP(w, req) // verified and recorded as the hook
						return
					}
					w.WriteHeader(200) // the careless 200 to an empty GET
					return
				}
				mu.Lock()
				hookRequests++
				first := hookRequests == 1
				mu.Unlock()
				if first {
					http.Redirect(w, req, "/moved", code)
					return
				}
				inner.ServeHTTP(w, req)
			})
			w := subscribe(t, s, r)
			incident(t, s, "API", cdnapi.StatusMajorOutage)
			start(t, s, testConfig())
			waitFor(t, "an attempt recorded as delivered", 5*time.Second, func() bool {
				a, _ := s.DeliveryAttempts(t.Context(), w.ID, 1)
				return len(a) == 1 && a[0].Result == cdnapi.DeliveryDelivered
			})
			accepted, _, bad, _ := r.snapshot()
			if len(bad) > 0 || len(accepted) != 1 {
				t.Fatalf("recorded as delivered, but the receiver accepted %d events (refused: %v)", len(accepted), bad)
			}
			attempts, err := s.DeliveryAttempts(t.Context(), w.ID, 10)
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			switch code {
			case 307, 308:
				// Followed, with the method and the signed body.
				if len(attempts) != 1 || attempts[0].Result != cdnapi.DeliveryDelivered || len(moved) != 1 ||
					!strings.HasPrefix(moved[0], "POST ") || hookRequests != 1 {
					t.Errorf("attempts %+v, requests to /moved %v, to the hook %d; want one delivered attempt, through one POST to /moved",
						attempts, moved, hookRequests)
				}
			default:
				// Not followed: the first attempt failed with the code, and
				// the retry reached the hook.
				if len(moved) != 0 {
					t.Errorf("the redirect was followed: requests to /moved %v", moved)
				}
				if len(attempts) != 2 || attempts[1].Result != cdnapi.DeliveryFailed || attempts[1].StatusCode != code ||
					!strings.Contains(attempts[1].Error, "redirect") || attempts[0].Result != cdnapi.DeliveryDelivered {
					t.Errorf("attempts (newest first) %+v; want a failed %d, then delivered", attempts, code)
				}
			}
			for id, n := range accepted {
				if n != 1 {
					t.Errorf("event %s accepted %d times", id, n)
				}
			}
		})
	}
}
