package health

import (
	"bytes"
	"context"
	"fmt"
	"github.com/cdnapi/cdnapi/internal/teststore"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
)

// testNow is the evaluators' clock in these tests, with a fraction of a
// second that updated_at must drop.
var testNow = time.Date(2026, 11, 20, 14, 3, 7, 900_000_000, time.UTC)

func fixedClock() time.Time { return testNow }

// The health checks the HTTP probes run against.
const (
	checkOK   = "ok"   // answers 200 at once
	check500  = "500"  // answers 500 at once
	checkSlow = "slow" // answers 200 after longer than the slow threshold
	checkHang = "hang" // does not answer until the client gives up
)

// healthServer starts a loopback health check of the given behaviour and
// returns its URL.
func healthServer(t *testing.T, behaviour string, slowFor time.Duration) string {
	t.Helper()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch behaviour {
		case check500:
			http.Error(w, "broken", http.StatusInternalServerError)
		case checkSlow:
			time.Sleep(slowFor)
		case checkHang:
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // runs first: frees a hung handler so Close can return
	return srv.URL + "/healthz?token=s3cret"
}

// httpProbe is a Probe of the health check at url: a 2xx answer works.
func httpProbe(url string) Probe {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("health check answered %d", resp.StatusCode)
		}
		return nil
	}
}

func TestEvaluate(t *testing.T) {
	const (
		op    = cdnapi.StatusOperational
		maint = cdnapi.StatusUnderMaintenance
		slow  = cdnapi.StatusDegradedPerformance
		down  = cdnapi.StatusMajorOutage
		none  = maint // no probe: not deployed here
	)
	type checks struct{ upload, scan string }
	tests := []struct {
		name          string
		overrides     []cdnapi.ComponentOverride
		checks        checks
		slowThreshold time.Duration
		pingTimeout   time.Duration
		closeStore    bool
		draining      bool
		// want holds the components to check; the others depend on
		// timing that a busy machine could change.
		want        map[string]cdnapi.Status
		wantOverall cdnapi.Status // "" when it depends on an unchecked component
		// wantUntil is the document's Until: the ends of the operators'
		// statuses in force.
		wantUntil map[string]time.Time
	}{
		{
			name:        "no upload service nor scanner deployed",
			want:        map[string]cdnapi.Status{"API": op, "Upload Service": none, "Storage": op, "Virus Scanning": none},
			wantOverall: none,
		},
		{
			name:        "closed store",
			closeStore:  true,
			want:        map[string]cdnapi.Status{"API": op, "Upload Service": none, "Storage": down, "Virus Scanning": none},
			wantOverall: down,
		},
		{
			name:          "slow store",
			slowThreshold: time.Nanosecond, // every real ping is slower
			want:          map[string]cdnapi.Status{"API": op, "Upload Service": none, "Storage": slow, "Virus Scanning": none},
			wantOverall:   slow,
		},
		{
			name:        "health checks answer 200",
			checks:      checks{upload: checkOK, scan: checkOK},
			want:        map[string]cdnapi.Status{"Upload Service": op, "Virus Scanning": op},
			wantOverall: "",
		},
		{
			name:        "upload check answers 500",
			checks:      checks{upload: check500, scan: checkOK},
			want:        map[string]cdnapi.Status{"API": op, "Upload Service": down},
			wantOverall: down,
		},
		{
			name:        "virus scanning check hangs past the timeout",
			checks:      checks{scan: checkHang},
			pingTimeout: 100 * time.Millisecond,
			want:        map[string]cdnapi.Status{"API": op, "Upload Service": none, "Virus Scanning": down},
			wantOverall: down,
		},
		{
			name:          "upload check slower than the threshold, within the timeout",
			checks:        checks{upload: checkSlow},
			slowThreshold: 20 * time.Millisecond,
			want:          map[string]cdnapi.Status{"Upload Service": slow},
		},
		{
			name:        "operator override of a component not deployed",
			overrides:   []cdnapi.ComponentOverride{{Name: "Virus Scanning", Status: down}},
			want:        map[string]cdnapi.Status{"API": op, "Upload Service": none, "Storage": op, "Virus Scanning": down},
			wantOverall: down,
		},
		{
			name:        "operator override wins over a failing health check",
			checks:      checks{upload: check500},
			overrides:   []cdnapi.ComponentOverride{{Name: "Upload Service", Status: maint, Until: testNow.Add(time.Hour)}},
			want:        map[string]cdnapi.Status{"Upload Service": maint},
			wantOverall: "",
			wantUntil:   map[string]time.Time{"Upload Service": testNow.Add(time.Hour).Truncate(time.Second)}, // stored in whole seconds
		},
		{
			name:        "operator override of a measured component",
			overrides:   []cdnapi.ComponentOverride{{Name: "Storage", Status: cdnapi.StatusPartialOutage}, {Name: "API", Status: maint}},
			want:        map[string]cdnapi.Status{"API": maint, "Upload Service": none, "Storage": cdnapi.StatusPartialOutage, "Virus Scanning": none},
			wantOverall: cdnapi.StatusPartialOutage,
		},
		{
			name:        "expired override is ignored",
			overrides:   []cdnapi.ComponentOverride{{Name: "Upload Service", Status: down, Until: testNow.Add(-time.Second)}},
			want:        map[string]cdnapi.Status{"API": op, "Upload Service": none, "Storage": op, "Virus Scanning": none},
			wantOverall: none,
		},
		{
			name:        "override of an unknown component is ignored",
			overrides:   []cdnapi.ComponentOverride{{Name: "Billing", Status: down}},
			want:        map[string]cdnapi.Status{"API": op, "Upload Service": none, "Storage": op, "Virus Scanning": none},
			wantOverall: none,
		},
		{
			name:        "draining",
			draining:    true,
			want:        map[string]cdnapi.Status{"API": maint, "Upload Service": none, "Storage": op, "Virus Scanning": none},
			wantOverall: maint,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			store := teststore.SQLite(t)
			for _, o := range tt.overrides {
				if err := store.SetComponentOverride(ctx, o); err != nil {
					t.Fatal(err)
				}
			}
			cfg := Config{
				Region:        "Frankfurt",
				PingTimeout:   tt.pingTimeout,
				SlowThreshold: tt.slowThreshold,
				Now:           fixedClock,
			}
			// Generous defaults: only the cases about slowness and
			// timeouts may see them, however busy the machine.
			if cfg.PingTimeout == 0 {
				cfg.PingTimeout = 10 * time.Second
			}
			if cfg.SlowThreshold == 0 {
				cfg.SlowThreshold = 5 * time.Second
			}
			if tt.checks.upload != "" {
				cfg.Upload = httpProbe(healthServer(t, tt.checks.upload, 2*tt.slowThreshold))
			}
			if tt.checks.scan != "" {
				cfg.VirusScanning = httpProbe(healthServer(t, tt.checks.scan, 2*tt.slowThreshold))
			}
			if tt.closeStore {
				store.Close()
			}
			e := New(store, cfg)
			if tt.draining {
				e.SetDraining()
			}

			got := e.Evaluate(ctx)
			checkShape(t, got, "Frankfurt")
			if !got.UpdatedAt.Equal(testNow.Truncate(time.Second)) {
				t.Errorf("updated_at %v, want the evaluation time in whole seconds", got.UpdatedAt)
			}
			for _, c := range got.Components {
				if want, ok := tt.want[c.Name]; ok && c.Status != want {
					t.Errorf("%s is %s, want %s", c.Name, c.Status, want)
				}
			}
			if tt.wantOverall != "" && got.Status != tt.wantOverall {
				t.Errorf("overall status %s, want %s", got.Status, tt.wantOverall)
			}
			if len(got.Until) != len(tt.wantUntil) {
				t.Errorf("until %v, want %v", got.Until, tt.wantUntil)
			}
			for name, want := range tt.wantUntil {
				if !got.Until[name].Equal(want) {
					t.Errorf("%s until %v, want %v", name, got.Until[name], want)
				}
			}
			if doc := e.Document(); doc.Status != got.Status || doc.UpdatedAt != got.UpdatedAt {
				t.Errorf("Document() = %+v, not the document Evaluate published (%+v)", doc, got)
			}
		})
	}
}

// checkShape fails the test unless doc has the fields API.md fixes: the
// version, the region, valid statuses, the components in their order, and
// an overall status that is the worst of them.
func checkShape(t *testing.T, doc cdnapi.StatusDocument, region string) {
	t.Helper()
	if doc.Version != "v1" || doc.Region != region {
		t.Errorf("version %q, region %q; want v1 and %q", doc.Version, doc.Region, region)
	}
	if len(doc.Components) != len(cdnapi.Components) {
		t.Fatalf("%d components, want %d", len(doc.Components), len(cdnapi.Components))
	}
	worst := cdnapi.StatusOperational
	for i, c := range doc.Components {
		if c.Name != cdnapi.Components[i] || !c.Status.Valid() {
			t.Errorf("component %d is %q %q, want %q with a valid status", i, c.Name, c.Status, cdnapi.Components[i])
		}
		worst = cdnapi.Worst(worst, c.Status)
	}
	if doc.Status != worst {
		t.Errorf("overall status %s, want the worst component status %s", doc.Status, worst)
	}
	if doc.UpdatedAt.Location() != time.UTC || doc.UpdatedAt.Nanosecond() != 0 {
		t.Errorf("updated_at %v is not whole seconds UTC", doc.UpdatedAt)
	}
}

func statusOf(doc cdnapi.StatusDocument, name string) cdnapi.Status {
	for _, c := range doc.Components {
		if c.Name == name {
			return c.Status
		}
	}
	return ""
}

func TestDocumentBeforeFirstEvaluation(t *testing.T) {
	e := New(teststore.SQLite(t), Config{Region: "Tokyo", Now: fixedClock})
	doc := e.Document()
	checkShape(t, doc, "Tokyo")
	for _, c := range doc.Components {
		want := cdnapi.StatusMajorOutage // nothing vouches for it yet
		if c.Name == cdnapi.ComponentAPI {
			want = cdnapi.StatusOperational
		}
		if c.Status != want {
			t.Errorf("before the first evaluation %s is %s, want %s", c.Name, c.Status, want)
		}
	}
}

func TestSetDrainingRepublishesAtOnce(t *testing.T) {
	up := func(context.Context) error { return nil }
	e := New(teststore.SQLite(t), Config{Now: fixedClock, Upload: up, VirusScanning: up})
	if got := e.Evaluate(context.Background()); got.Status != cdnapi.StatusOperational {
		t.Fatalf("overall status %s before draining, want operational", got.Status)
	}
	e.SetDraining()
	doc := e.Document()
	if s := statusOf(doc, cdnapi.ComponentAPI); s != cdnapi.StatusUnderMaintenance {
		t.Errorf("API is %s right after SetDraining, want under_maintenance", s)
	}
	if doc.Status != cdnapi.StatusUnderMaintenance {
		t.Errorf("overall status %s while draining, want under_maintenance", doc.Status)
	}
	if s := statusOf(e.Evaluate(context.Background()), cdnapi.ComponentAPI); s != cdnapi.StatusUnderMaintenance {
		t.Errorf("API is %s after the next round, want under_maintenance still", s)
	}
}

// TestChangedWakesOnPublish: the channel of Changed is closed by the next
// publication (a round, SetDraining), never by a canceled round, and the
// document read after taking it is at least as new as the one it signals:
// the status streams sleep on it instead of polling.
func TestChangedWakesOnPublish(t *testing.T) {
	closed := func(c <-chan struct{}) bool {
		select {
		case <-c:
			return true
		default:
			return false
		}
	}
	e := New(teststore.SQLite(t), Config{Now: fixedClock})
	first := e.Changed()
	if closed(first) {
		t.Fatal("Changed is closed before any publication")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	e.Evaluate(ctx)
	if closed(first) {
		t.Error("a canceled round, which publishes nothing, closed Changed")
	}
	e.Evaluate(context.Background())
	if !closed(first) {
		t.Fatal("a round published a document and Changed is still open")
	}
	second := e.Changed()
	if closed(second) {
		t.Fatal("Changed taken after a round is closed already")
	}
	e.SetDraining()
	if !closed(second) {
		t.Fatal("SetDraining published a document and Changed is still open")
	}
	if s := statusOf(e.Document(), cdnapi.ComponentAPI); s != cdnapi.StatusUnderMaintenance {
		t.Errorf("API is %s once Changed signalled the drain, want under_maintenance", s)
	}
}

// When the store fails, the overrides read before stay in force, and
// Storage shows the failure.
func TestKeepsOverridesWhileStoreFails(t *testing.T) {
	ctx := context.Background()
	store := teststore.SQLite(t)
	err := store.SetComponentOverride(ctx, cdnapi.ComponentOverride{Name: cdnapi.ComponentUpload, Status: cdnapi.StatusUnderMaintenance})
	if err != nil {
		t.Fatal(err)
	}
	e := New(store, Config{Now: fixedClock})
	if s := statusOf(e.Evaluate(ctx), cdnapi.ComponentUpload); s != cdnapi.StatusUnderMaintenance {
		t.Fatalf("Upload Service is %s, want the override under_maintenance", s)
	}
	store.Close()
	doc := e.Evaluate(ctx)
	if s := statusOf(doc, cdnapi.ComponentUpload); s != cdnapi.StatusUnderMaintenance {
		t.Errorf("Upload Service is %s after the store failed, want the last known override", s)
	}
	if s := statusOf(doc, cdnapi.ComponentStorage); s != cdnapi.StatusMajorOutage {
		t.Errorf("Storage is %s with a closed store, want major_outage", s)
	}
	if s := statusOf(doc, cdnapi.ComponentAPI); s != cdnapi.StatusOperational {
		t.Errorf("API is %s with a closed store, want operational", s)
	}
}

// A round cut short by its caller publishes nothing: its failures are the
// caller's, not the components'.
func TestCanceledRoundPublishesNothing(t *testing.T) {
	e := New(teststore.SQLite(t), Config{Now: fixedClock})
	before := e.Evaluate(context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	e.Evaluate(ctx)
	if s := statusOf(e.Document(), cdnapi.ComponentStorage); s != statusOf(before, cdnapi.ComponentStorage) {
		t.Errorf("Storage is %s after a canceled round, want %s as before", s, statusOf(before, cdnapi.ComponentStorage))
	}
}

func TestLogsChangesWithoutSecrets(t *testing.T) {
	var logs bytes.Buffer
	e := New(teststore.SQLite(t), Config{
		Upload: httpProbe(healthServer(t, check500, 0)),
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Now:    fixedClock,
	})
	e.Evaluate(context.Background())
	first := logs.String()
	if n := strings.Count(first, "component status changed"); n != len(cdnapi.Components) {
		t.Errorf("the first round logged %d status lines, want one per component:\n%s", n, first)
	}
	if !strings.Contains(first, `component="Upload Service" status=major_outage`) {
		t.Errorf("the Upload Service outage was not logged:\n%s", first)
	}
	if strings.Contains(first, "s3cret") || strings.Contains(first, "127.0.0.1") {
		t.Errorf("the log shows the health URL:\n%s", first)
	}
	e.Evaluate(context.Background())
	if logs.Len() != len(first) {
		t.Errorf("a round without changes logged:\n%s", logs.String()[len(first):])
	}
}

func TestRunEvaluatesUntilCanceled(t *testing.T) {
	e := New(teststore.SQLite(t), Config{Interval: time.Millisecond, Now: fixedClock})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		e.Run(ctx)
		close(done)
	}()
	// The placeholder shows Storage as down; the first round of Run
	// measures it.
	deadline := time.Now().Add(10 * time.Second)
	for statusOf(e.Document(), cdnapi.ComponentStorage) != cdnapi.StatusOperational {
		if time.Now().After(deadline) {
			t.Fatal("Run did not evaluate")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}

// Draining before the first evaluation has nothing to compare with, so it
// logs nothing; the first evaluation then logs every component once.
func TestDrainingBeforeFirstEvaluationLogsNothing(t *testing.T) {
	var logs bytes.Buffer
	e := New(teststore.SQLite(t), Config{Logger: slog.New(slog.NewTextHandler(&logs, nil)), Now: fixedClock})
	e.SetDraining()
	if logs.Len() != 0 {
		t.Errorf("SetDraining before any evaluation logged:\n%s", logs.String())
	}
	if s := statusOf(e.Document(), cdnapi.ComponentAPI); s != cdnapi.StatusUnderMaintenance {
		t.Errorf("API is %s after SetDraining, want under_maintenance", s)
	}
	e.Evaluate(context.Background())
	if n := strings.Count(logs.String(), "component status changed"); n != len(cdnapi.Components) {
		t.Errorf("the first round logged %d status lines, want %d:\n%s", n, len(cdnapi.Components), logs.String())
	}
	if !strings.Contains(logs.String(), `component=API status=under_maintenance`) {
		t.Errorf("the first round did not log the draining API:\n%s", logs.String())
	}
}

// NotDeployed names the components without a probe, which read
// under_maintenance by plan, for the status page's banner.
func TestNotDeployed(t *testing.T) {
	if got := New(nil, Config{}).NotDeployed(); !slices.Equal(got, []string{cdnapi.ComponentUpload, cdnapi.ComponentVirusScanning}) {
		t.Errorf("with no probes: %q", got)
	}
	cfg := Config{Upload: httpProbe(healthServer(t, "ok", time.Second))}
	if got := New(nil, cfg).NotDeployed(); !slices.Equal(got, []string{cdnapi.ComponentVirusScanning}) {
		t.Errorf("with an upload probe: %q", got)
	}
}
