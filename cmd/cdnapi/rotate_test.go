package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi/internal/demo"
	"github.com/cdnapi/cdnapi/internal/nodetest"
)

// signedDelivery is one request a webhook receiver got, as it got it.
type signedDelivery struct {
	ID        string `json:"id"`
	Timestamp string `json:"timestamp"`
	Signature string `json:"signature"`
	Body      string `json:"body"`
}

// deliveryRecorder answers every delivery 200 and keeps it, to be
// verified afterwards.
type deliveryRecorder struct {
	*httptest.Server
	mu   sync.Mutex
	got  []signedDelivery
	more chan struct{}
}

func newDeliveryRecorder(t *testing.T) *deliveryRecorder {
	r := &deliveryRecorder{more: make(chan struct{}, 1000)}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, signedDelivery{req.Header.Get("webhook-id"), req.Header.Get("webhook-timestamp"),
			req.Header.Get("webhook-signature"), string(body)})
		r.mu.Unlock()
		r.more <- struct{}{}
	}))
	t.Cleanup(r.Close)
	return r
}

// wait returns the deliveries once there are n.
func (r *deliveryRecorder) wait(t *testing.T, n int) []signedDelivery {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		r.mu.Lock()
		got := append([]signedDelivery(nil), r.got...)
		r.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-r.more:
		case <-deadline:
			t.Fatalf("%d deliveries within 20s, want %d", len(got), n)
		}
	}
}

// verifier checks deliveries with the standardwebhooks library (the
// Standard Webhooks reference for JavaScript): it reads a JSON array of
// {secret, delivery} from standard input and prints, for each, "ok" or
// the library's error.
const verifier = `
const { Webhook } = require("standardwebhooks");
let input = "";
process.stdin.on("data", (c) => (input += c));
process.stdin.on("end", () => {
  const out = JSON.parse(input).map(({ secret, d }) => {
    try {
      new Webhook(secret).verify(d.body, { "webhook-id": d.id, "webhook-timestamp": d.timestamp, "webhook-signature": d.signature });
      return "ok";
    } catch (e) {
      return e.message;
    }
  });
  console.log(JSON.stringify(out));
});
`

// TestWebhookSecretRotation: across `webhooks rotate-secret --grace`, a
// receiver that holds the old secret and moves to the new one at any time
// within the grace verifies every delivery, by the standardwebhooks
// library: before the rotation the old secret verifies each (the new one
// none); within the grace both do, as both sign; after it only the new one.
func TestWebhookSecretRotation(t *testing.T) {
	db := migratedDB(t, "rotate.db")
	r := newDeliveryRecorder(t)
	out, _ := mustRunCmd(t, "", "webhooks", "add", r.URL+"/hooks", "--events", "region.changed", "--webhook-allow-private", "--db", db)
	id, oldSecret := field(t, out, "id"), field(t, out, "secret")
	startServe(t, nil, append([]string{"--db", db}, webhookServeFlags...)...)
	regions := len(demo.Regions())

	// Before: the regions written, one region.changed each.
	mustRunCmd(t, regionsNDJSON(t, "operational"), "ingest", "regions", "--db", db)
	before := r.wait(t, regions)

	const grace = 4 * time.Second
	out, _ = mustRunCmd(t, "", "webhooks", "rotate-secret", id, "--grace", grace.String(), "--db", db)
	newSecret := field(t, out, "secret")
	until, err := time.Parse(time.RFC3339, strings.TrimPrefix(field(t, out, "old"), "signs too until "))
	if err != nil || newSecret == oldSecret || until.Before(time.Now().Add(grace-time.Second)) {
		t.Fatalf("rotate-secret printed %q (%v)", out, err)
	}
	list, _ := mustRunCmd(t, "", "webhooks", "list", "--db", db)
	if !strings.Contains(list, field(t, out, "old")[len("signs too until "):]) || strings.Contains(list, "whsec_") {
		t.Errorf("list printed %q: want the grace's end, never a secret", list)
	}

	// Within the grace, then after it: the grace is a clock, so the test
	// waits for its end, then makes the last changes.
	mustRunCmd(t, regionsNDJSON(t, "degraded_performance"), "ingest", "regions", "--db", db)
	during := r.wait(t, 2*regions)[regions:]
	<-time.After(time.Until(until))
	mustRunCmd(t, regionsNDJSON(t, "partial_outage"), "ingest", "regions", "--db", db)
	after := r.wait(t, 3*regions)[2*regions:]

	// Each delivery with each secret, and whether it must verify. Within
	// the grace a delivery is signed by both exactly when it was signed
	// before the grace's end, which its webhook-timestamp says.
	type check struct {
		Secret string         `json:"secret"`
		D      signedDelivery `json:"d"`
		want   bool
		what   string
	}
	var checks []check
	inGrace := 0
	for _, d := range before {
		checks = append(checks, check{oldSecret, d, true, "before, old secret"}, check{newSecret, d, false, "before, new secret"})
	}
	for _, d := range during {
		signedInGrace := parseUnix(t, d.Timestamp).Before(until)
		if signedInGrace {
			inGrace++
		}
		checks = append(checks, check{oldSecret, d, signedInGrace, "grace, old secret"}, check{newSecret, d, true, "grace, new secret"})
	}
	for _, d := range after {
		checks = append(checks, check{oldSecret, d, false, "after, old secret"}, check{newSecret, d, true, "after, new secret"})
	}
	if inGrace == 0 {
		t.Fatalf("no delivery signed within the %v grace: the machine is too slow for this test", grace)
	}
	input, _ := json.Marshal(checks)
	var results []string
	if err := json.Unmarshal(nodetest.Run(t, verifier, input), &results); err != nil || len(results) != len(checks) {
		t.Fatalf("the verifier printed %v (%v)", results, err)
	}
	for i, c := range checks {
		if ok := results[i] == "ok"; ok != c.want {
			t.Errorf("%s: delivery %s (signature %q): standardwebhooks says %q, want verified %v",
				c.what, c.D.ID, c.D.Signature, results[i], c.want)
		}
	}
	t.Logf("%d deliveries before, %d within the grace (%d signed twice), %d after; %d verifications",
		len(before), len(during), inGrace, len(after), len(checks))
}

// field returns the value of the line of out that starts with name and
// spaces, as webhooks add and rotate-secret print them.
func field(t *testing.T, out, name string) string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if k, v, _ := strings.Cut(line, " "); k == name {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("no %s in %q", name, out)
	return ""
}

func parseUnix(t *testing.T, s string) time.Time {
	t.Helper()
	var sec int64
	if err := json.Unmarshal([]byte(s), &sec); err != nil {
		t.Fatalf("webhook-timestamp %q: %v", s, err)
	}
	return time.Unix(sec, 0)
}
