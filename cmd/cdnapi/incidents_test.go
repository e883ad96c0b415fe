package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi/internal/apitest"
)

// TestMaintenanceBecomesAnIncident: an operator's maintenance, set with the
// CLI beside a running serve, shows in the incidents list with its message
// within a few evaluation rounds, and resolves once cleared.
func TestMaintenanceBecomesAnIncident(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "incidents.db")
	s := startServe(t, nil, "--db", db)
	t.Cleanup(func() { s.stop() })
	v := apitest.NewValidator(t)
	cli := func(args ...string) {
		t.Helper()
		if err := run(context.Background(), append(args, "--db", db), getenvFrom(nil), strings.NewReader(""), io.Discard, io.Discard); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	type incident struct {
		Component, Status string
		Message           *string
		ResolvedAt        *string `json:"resolved_at"`
	}
	waitFor := func(what string, ok func([]incident) bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			_, body := get(t, v, s.api+"/api/v1/status/incidents")
			var list struct{ Data []incident }
			if err := json.Unmarshal(body, &list); err != nil {
				t.Fatal(err)
			}
			if ok(list.Data) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %s within 10s: %s", what, body)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	const msg = "Replacing the signature database; scans resume by 18:00 UTC."
	cli("status", "set", "Virus Scanning", "under_maintenance", "--until", "2999-01-01T00:00:00Z", "--message", msg)
	waitFor("open maintenance", func(l []incident) bool {
		return len(l) == 1 && l[0].Component == "Virus Scanning" && l[0].Status == "under_maintenance" &&
			l[0].Message != nil && *l[0].Message == msg && l[0].ResolvedAt == nil
	})
	cli("status", "clear", "Virus Scanning")
	waitFor("resolved maintenance", func(l []incident) bool { return len(l) == 1 && l[0].ResolvedAt != nil })

	var stderr bytes.Buffer
	if err := run(context.Background(), []string{"status", "clear", "API", "--message", "x", "--db", db},
		getenvFrom(nil), strings.NewReader(""), io.Discard, &stderr); err == nil || !strings.Contains(err.Error(), "--message goes with set") {
		t.Errorf("clear --message: %v, want a usage error", err)
	}
}

// TestStatusMessageRefusesControls: --message is written into /status's
// HTML and the incidents' JSON, so, like a name, it may hold no control
// character (ESC and BS would rewrite a terminal's view of it; C1 as
// well); the command fails as a usage error and writes nothing.
func TestStatusMessageRefusesControls(t *testing.T) {
	db := migratedDB(t, "status-message.db")
	for _, msg := range []string{"red \x1b[31malert", "back\bspace", "tab\there", "line\nbreak", "del\x7f", "c1 \u0085 next line"} {
		var stderr bytes.Buffer
		err := run(context.Background(), []string{"status", "set", "API", "major_outage", "--message", msg, "--db", db},
			getenvFrom(nil), strings.NewReader(""), io.Discard, &stderr)
		if err == nil || !strings.Contains(err.Error(), "control character") {
			t.Errorf("--message %q: %v, want a usage error about control characters", msg, err)
		}
	}
	var stdout bytes.Buffer
	if err := run(context.Background(), []string{"status", "--db", db}, getenvFrom(nil), strings.NewReader(""), &stdout, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), "API             -") {
		t.Errorf("status list after refused sets:\n%s\nwant API without a status", stdout.String())
	}
	// Text beyond ASCII is still a message.
	if err := run(context.Background(), []string{"status", "set", "API", "major_outage", "--message", "Störung – café ☕", "--db", db},
		getenvFrom(nil), strings.NewReader(""), io.Discard, io.Discard); err != nil {
		t.Errorf("a message with accents and symbols: %v", err)
	}
}
