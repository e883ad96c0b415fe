package main

import (
	"bufio"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/apitest"
	"github.com/cdnapi/cdnapi/internal/nginx"
	"github.com/cdnapi/cdnapi/internal/nginxtest"
)

// TestUploadComponents: both components measured, on one upload path
// (clamd, the upload server, serve and `cdnapi uploads`) that the subtests
// share, in order. serve's start reports no outage of the Upload Service
// while its first canary is in flight. With clamd stopped, Virus Scanning
// reads major_outage within two status intervals, and an upload made
// meanwhile stays unlisted until clamd is back, then is listed. With the
// upload server stopped, Upload Service reads major_outage, which shows as
// an incident in the list, the Atom feed, the SSE stream and a webhook, and
// operational again once it is back. A canary slower than its limit reads
// degraded_performance.
func TestUploadComponents(t *testing.T) {
	const interval = 500 * time.Millisecond
	db := migratedDB(t, "components.db")
	upKey, _ := newKey(t, db, "site", "upload")
	readKey, _ := newKey(t, db, "site", "read")
	hooks := newHookReceiver(t)
	addHook(t, hooks, db, "--events", "incident.opened,incident.resolved")
	p := startUploadRig(t, db, append([]string{"--status-interval", interval.String(),
		"--upload-canary-interval", "200ms", "--upload-canary-timeout", "10s"}, webhookServeFlags...)...)
	p.uploadsInProcess(t)
	v := apitest.NewValidator(t)

	t.Run("start reads no outage", func(t *testing.T) {
		p.waitComponent(t, v, cdnapi.ComponentVirusScanning, cdnapi.StatusOperational, 2*time.Minute)
		p.waitComponent(t, v, cdnapi.ComponentUpload, cdnapi.StatusOperational, 2*time.Minute)
		// serve makes its first status before its listeners serve, so
		// before the first canary, which goes through the upload
		// authorization, can finish (over a second: the settle time).
		// That canary in flight is no measurement: it must not be
		// recorded as an outage, nor open an incident.
		st := openTestStore(t, db)
		changes, err := st.StatusChanges(t.Context(), cdnapi.SubjectComponent, time.Time{}, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range changes {
			if c.Subject == cdnapi.ComponentUpload {
				t.Logf("Upload Service %s at %s", c.Status, c.At.Format(time.TimeOnly))
				if c.Status != cdnapi.StatusOperational && c.Status != cdnapi.StatusUnderMaintenance {
					t.Errorf("Upload Service recorded %s at start, while its first canary was in flight", c.Status)
				}
			}
		}
		incidents, err := st.ListIncidents(t.Context(), cdnapi.IncidentQuery{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if len(incidents) > 0 {
			t.Errorf("incidents at start: %+v", incidents)
		}
	})

	t.Run("clamd stopped", func(t *testing.T) {
		p.clam.Stop(t)
		// Counted from the moment clamd has exited (Stop waits for it;
		// rounds during its shutdown, which may already fail, are not
		// counted), and read before each read of the status: a round
		// counts its probe before it publishes, so n counts no round after
		// the one that published major_outage, however late the poll.
		// Two intervals are then at most two rounds: the one in progress
		// when clamd exited, whose PING may have been answered before,
		// and the next, whose PING cannot be. Counted in rounds rather
		// than seconds, so that a loaded machine, which stretches them,
		// does not fail it.
		rounds := countRounds(t, p.serve.admin)
		start := time.Now()
		n := 0
		for {
			n = rounds()
			if p.component(t, v, cdnapi.ComponentVirusScanning) == cdnapi.StatusMajorOutage {
				break
			}
			if time.Since(start) > 2*time.Minute {
				t.Fatalf("Virus Scanning not major_outage %d rounds after clamd stopped", n)
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Logf("clamd stopped: Virus Scanning major_outage after %v, %d evaluation rounds (interval %v)",
			time.Since(start).Round(time.Millisecond), n, interval)
		if n > 2 {
			t.Errorf("Virus Scanning took %d evaluation rounds to read major_outage, want two at most", n)
		}
		// Like any component's, the change is in the status history.
		p.waitIncident(t, v, cdnapi.ComponentVirusScanning, 2*time.Minute)

		waiting := []byte("uploaded while clamd was down")
		if code, body := p.put(t, upKey, "/waiting.txt", waiting); code != http.StatusCreated {
			t.Fatalf("PUT while clamd is down: %d %s", code, body)
		}
		// It stays unlisted while clamd is down: wait until the gate has
		// tried it (staged), then look.
		staged := filepath.Join(p.root, "staging", "site", "waiting.txt")
		for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
			if _, err := os.Stat(staged); err == nil {
				break
			}
			if time.Since(start) > 2*time.Minute {
				t.Fatalf("waiting.txt not staged: %v", filesUnder(t, p.root))
			}
		}
		if _, ok := p.files(t, v, readKey)["waiting.txt"]; ok {
			t.Fatal("a file was listed while clamd was down")
		}
		p.clam.Start(t)
		p.waitListed(t, v, readKey, "waiting.txt", waiting, 2*time.Minute)
		p.waitComponent(t, v, cdnapi.ComponentVirusScanning, cdnapi.StatusOperational, 2*time.Minute)
	})

	t.Run("upload server stopped", func(t *testing.T) {
		seen := streamSees(t, p.serve.api, cdnapi.ComponentUpload, cdnapi.StatusMajorOutage)
		if err := p.upload.Stop(); err != nil {
			t.Fatal(err)
		}
		took := p.waitComponent(t, v, cdnapi.ComponentUpload, cdnapi.StatusMajorOutage, 2*time.Minute)
		t.Logf("upload server stopped: Upload Service major_outage after %v", took.Round(time.Millisecond))
		// The change reaches every place Storage's does: the incidents,
		// the feed, the stream and the webhooks.
		p.waitIncident(t, v, cdnapi.ComponentUpload, 2*time.Minute)
		eventually(t, "the Upload Service incident in the Atom feed", func() error {
			return feedHas(p.serve.api, "Upload Service: major outage")
		})
		select {
		case <-seen:
		case <-time.After(2 * time.Minute):
			t.Error("the status stream did not tell Upload Service major_outage")
		}
		opened := waitIncidentEvent(t, hooks, "incident.opened", cdnapi.ComponentUpload)
		if opened.Data.Status != string(cdnapi.StatusMajorOutage) || opened.Data.ResolvedAt != nil {
			t.Errorf("incident.opened %+v", opened.Data)
		}

		if err := p.upload.Start(); err != nil {
			t.Fatal(err)
		}
		took = p.waitComponent(t, v, cdnapi.ComponentUpload, cdnapi.StatusOperational, 2*time.Minute)
		t.Logf("upload server started: Upload Service operational after %v", took.Round(time.Millisecond))
		resolved := waitIncidentEvent(t, hooks, "incident.resolved", cdnapi.ComponentUpload)
		if resolved.Data.ID != opened.Data.ID || resolved.Data.ResolvedAt == nil {
			t.Errorf("incident.resolved %+v, want %s resolved", resolved.Data, opened.Data.ID)
		}
		if _, _, _, bad := hooks.snapshot(); len(bad) > 0 {
			t.Errorf("the receiver refused: %v", bad)
		}
	})

	t.Run("slow canary", func(t *testing.T) {
		// A second serve, with its own upload server in front of it on
		// the same uploads root, whose canary has 1ms to be listed: a
		// real round trip (the settle second) is slower.
		authAddr := freeAddr(t)
		up := nginxtest.StartUpload(t, nginx.Upload{Root: p.root, Auth: authAddr, MaxBytes: 1 << 20})
		s := startServe(t, nil, "--db", db, "--auth", "required", "--upload-auth-addr", authAddr, "--uploads", p.root,
			"--upload-url", up.URL(), "--upload-canary-interval", "200ms", "--upload-canary-slow", "1ms")
		var err error
		for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
			if err = wantComponent(s.api, cdnapi.ComponentUpload, cdnapi.StatusDegradedPerformance); err == nil {
				break
			}
			if time.Since(start) > 2*time.Minute {
				t.Fatal(err)
			}
		}
	})
}

// streamSees reads api's status stream from now on, and closes the
// returned channel once a document in it has component at want.
func streamSees(t *testing.T, api, component string, want cdnapi.Status) <-chan struct{} {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, api+"/api/v1/status/stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/v1/status/stream: %d", res.StatusCode)
	}
	seen := make(chan struct{})
	go func() {
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			var doc cdnapi.StatusDocument
			if !ok || json.Unmarshal([]byte(data), &doc) != nil {
				continue
			}
			for _, c := range doc.Components {
				if c.Name == component && c.Status == want {
					close(seen)
					return
				}
			}
		}
	}()
	return seen
}

// feedHas reports, as an error, whether api's incidents feed lacks an
// entry titled title.
func feedHas(api, title string) error {
	res, err := http.Get(api + "/api/v1/status/incidents.atom")
	if err != nil {
		return err
	}
	defer res.Body.Close()
	var feed struct {
		Entries []struct {
			Title string `xml:"title"`
		} `xml:"entry"`
	}
	if err := xml.NewDecoder(res.Body).Decode(&feed); err != nil {
		return err
	}
	var titles []string
	for _, e := range feed.Entries {
		if e.Title == title {
			return nil
		}
		titles = append(titles, e.Title)
	}
	return fmt.Errorf("no entry %q in the feed: %q", title, titles)
}

// waitIncidentEvent waits for a webhook event of type typ about the
// component's incident, accepted (signed) by the receiver.
func waitIncidentEvent(t *testing.T, r *hookReceiver, typ, component string) hookEvent {
	t.Helper()
	deadline := time.After(2 * time.Minute)
	for {
		events, _, _, _ := r.snapshot()
		for _, e := range events {
			if e.Type == typ && e.Data.Component == component {
				return e
			}
		}
		select {
		case <-r.arrived:
		case <-deadline:
			t.Fatalf("no %s of %s within two minutes: %+v", typ, component, events)
		}
	}
}
