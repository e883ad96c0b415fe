package main

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestRegionsCommand(t *testing.T) {
	db := migratedDB(t, "regions.db")
	mustRunCmd(t, demoRegionsNDJSON(t), "ingest", "regions", "--db", db)

	out, _ := mustRunCmd(t, "", "regions", "list", "--db", db)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 25 || !strings.HasPrefix(lines[0], "CODE ") || !strings.HasPrefix(lines[1], "AMS1 ") ||
		!strings.Contains(out, "FRA1  Frankfurt     eu-central    DE       operational") {
		t.Errorf("regions list printed\n%s", out)
	}

	out, _ = mustRunCmd(t, "", "regions", "set-status", "FRA1", "under_maintenance", "--db", db)
	if want := "CODE  NAME       ZONE        COUNTRY  STATUS             UNTIL\nFRA1  Frankfurt  eu-central  DE       under_maintenance  -\n"; out != want {
		t.Errorf("set-status printed\n%s\nwant\n%s", out, want)
	}
	out, _ = mustRunCmd(t, "", "regions", "list", "--db", db)
	if !strings.Contains(out, "FRA1  Frankfurt     eu-central    DE       under_maintenance") ||
		strings.Count(out, "under_maintenance") != 1 {
		t.Errorf("the new status is not listed:\n%s", out)
	}

	// An end as a duration or a time; past its end a region is
	// operational again, and the list says what expired.
	out, _ = mustRunCmd(t, "", "regions", "set-status", "FRA1", "under_maintenance", "--until", "2h", "--db", db)
	if want := time.Now().Add(2 * time.Hour).UTC().Format("2006-01-02T15"); !strings.Contains(out, "under_maintenance  "+want) {
		t.Errorf("set-status --until 2h printed\n%s\nwant an end at %s:…", out, want)
	}
	mustRunCmd(t, "", "regions", "set-status", "IAD1", "major_outage", "--until", "2999-01-01T00:00:00Z", "--db", db)
	mustRunCmd(t, "", "regions", "set-status", "AMS1", "partial_outage", "--until", "1s", "--db", db)
	time.Sleep(1100 * time.Millisecond)
	out, _ = mustRunCmd(t, "", "regions", "list", "--db", db)
	for _, want := range []string{"IAD1  Ashburn", "major_outage       2999-01-01T00:00:00Z", "AMS1  Amsterdam", "operational        expired 20", "(was partial_outage)"} {
		if !strings.Contains(out, want) {
			t.Errorf("regions list printed\n%s\nwant %q", out, want)
		}
	}

	tests := []struct {
		name  string
		args  []string
		usage bool
		want  string
	}{
		{"unknown region", []string{"regions", "set-status", "XYZ9", "operational"}, false, "there is no region XYZ9 (see cdnapi regions list)"},
		{"malformed code", []string{"regions", "set-status", "fra1", "operational"}, true, `region code "fra1": want three upper-case letters and a digit`},
		{"unknown status", []string{"regions", "set-status", "FRA1", "down"}, true, `unknown status "down"; want one of "operational"`},
		{"unknown verb", []string{"regions", "show"}, true, "want list or set-status CODE STATUS"},
		{"missing status", []string{"regions", "set-status", "FRA1"}, true, "want list or set-status CODE STATUS"},
		{"past until", []string{"regions", "set-status", "FRA1", "operational", "--until", "2000-01-01T00:00:00Z"}, true, "--until must be in the future"},
		{"negative until", []string{"regions", "set-status", "FRA1", "operational", "--until", "-2h"}, true, "--until must be in the future"},
		{"bad until", []string{"regions", "set-status", "FRA1", "operational", "--until", "tomorrow"}, true, "duration such as 2h"},
		{"until with list", []string{"regions", "list", "--until", "2h"}, true, "--until goes with set-status"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := runCmd(t, "", append(tt.args, "--db", db)...)
			if err == nil || errors.Is(err, errUsage) != tt.usage || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v (usage %v), want one containing %q (usage %v)", err, errors.Is(err, errUsage), tt.want, tt.usage)
			}
		})
	}
}
