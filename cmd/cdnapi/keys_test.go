package main

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/cdnapi/cdnapi/internal/auth"
)

func TestKeysCommand(t *testing.T) {
	db := migratedDB(t, "keys.db")
	out, errOut := mustRunCmd(t, "", "keys", "create", "--project", "alpha", "--name", "ci deploy", "--db", db)
	key := strings.TrimSuffix(out, "\n")
	if !auth.WellFormed(key) || strings.Count(out, "\n") != 1 {
		t.Fatalf("keys create printed %q on stdout, want the key alone on one line", out)
	}
	id := regexp.MustCompile(`key_[0-9A-Za-z]+`).FindString(errOut)
	if id == "" {
		t.Fatalf("keys create said %q on stderr, want the new key's ID", errOut)
	}
	if !strings.Contains(errOut, "scope read") {
		t.Errorf("keys create said %q on stderr, want the new key's scope (read, the default)", errOut)
	}
	_, errOut = mustRunCmd(t, "", "keys", "create", "--project", "beta", "--scope", "upload", "--expires-in", "1h", "--db", db)
	if !strings.Contains(errOut, "scope upload") {
		t.Errorf("keys create --scope upload said %q on stderr", errOut)
	}

	_, errOut = mustRunCmd(t, "", "keys", "create", "--project", "delta", "--scope", "edge", "--region", "FRA1", "--db", db)
	if !strings.Contains(errOut, "scope edge of region FRA1") || strings.Contains(errOut, "warning") {
		t.Errorf("keys create --scope edge --region FRA1 said %q on stderr, want its scope and region and no warning of files", errOut)
	}

	out, _ = mustRunCmd(t, "", "keys", "list", "--db", db)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	edge := regexp.MustCompile(`(?m)^key_\w+ +cdk_\w{4}… +delta +edge +FRA1 +- +\S+Z +never +never +-$`)
	// PREFIX is the key's first 8 characters, enough to match a key found
	// in a log to its ID.
	alpha := regexp.MustCompile(`(?m)^` + id + ` +` + regexp.QuoteMeta(key[:8]) + `… +alpha +read +- +"ci deploy" +\S+Z +never +never +-$`)
	beta := regexp.MustCompile(`(?m)^key_\w+ +cdk_\w{4}… +beta +upload +- +- +\S+Z +\S+Z +never +-$`)
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "ID ") || !regexp.MustCompile(` SCOPE +REGION `).MatchString(lines[0]) ||
		!alpha.MatchString(out) || !beta.MatchString(out) || !edge.MatchString(out) {
		t.Errorf("keys list printed\n%s", out)
	}
	hash := auth.Hash(key)
	if strings.Contains(out, key[:9]) || strings.Contains(out, key[8:12]) || strings.Contains(strings.ToLower(out), "sha") ||
		strings.Contains(out, string(hash[:])) {
		t.Errorf("keys list shows the key or its hash:\n%s", out)
	}
	out, _ = mustRunCmd(t, "", "keys", "list", "--project", "beta", "--db", db)
	if strings.Contains(out, "alpha") || !strings.Contains(out, "beta") {
		t.Errorf("keys list --project beta printed\n%s", out)
	}

	out, _ = mustRunCmd(t, "", "keys", "revoke", id, "--db", db)
	if !strings.Contains(out, "revoked "+id) {
		t.Errorf("keys revoke printed %q", out)
	}
	out, _ = mustRunCmd(t, "", "keys", "list", "--project", "alpha", "--db", db)
	if !regexp.MustCompile(id + `.* \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\s*$`).MatchString(strings.Split(strings.TrimSpace(out), "\n")[1]) {
		t.Errorf("the revoked key shows no revocation time:\n%s", out)
	}

	// A leaked key is revoked by the key itself: its hash finds its ID.
	leaked, _ := mustRunCmd(t, "", "keys", "create", "--project", "gamma", "--db", db)
	leaked = strings.TrimSpace(leaked)
	out, _ = mustRunCmd(t, "", "keys", "revoke", leaked, "--db", db)
	list, _ := mustRunCmd(t, "", "keys", "list", "--project", "gamma", "--db", db)
	leakedID := regexp.MustCompile(`key_\w+`).FindString(list)
	if !strings.Contains(out, "revoked "+leakedID) || strings.Contains(out, leaked[:9]) {
		t.Errorf("keys revoke KEY printed %q, want the ID %s and not the key", out, leakedID)
	}
	if !regexp.MustCompile(`\d\dZ\s*$`).MatchString(list) {
		t.Errorf("the key revoked by itself shows no revocation time:\n%s", list)
	}

	for _, tt := range []struct {
		name  string
		args  []string
		usage bool
		want  string
	}{
		{"no project", []string{"keys", "create"}, true, "--project"},
		{"bad project", []string{"keys", "create", "--project", "a b"}, true, "--project"},
		{"negative expiry", []string{"keys", "create", "--project", "a", "--expires-in", "-1h"}, true, "--expires-in"},
		{"bogus scope", []string{"keys", "create", "--project", "a", "--scope", "bogus"}, true, "--scope must be read, upload or edge, not \"bogus\""},
		{"empty scope", []string{"keys", "create", "--project", "a", "--scope", ""}, true, "--scope must be read, upload or edge"},
		{"edge without region", []string{"keys", "create", "--project", "a", "--scope", "edge"}, true, "--region: an edge key needs the region"},
		{"edge, bad region", []string{"keys", "create", "--project", "a", "--scope", "edge", "--region", "fra1"}, true, "--region: a region code is three upper-case letters"},
		{"read with region", []string{"keys", "create", "--project", "a", "--region", "FRA1"}, true, "--region: only an edge key is bound to a region"},
		{"upload with region", []string{"keys", "create", "--project", "a", "--scope", "upload", "--region", "FRA1"}, true, "--region: only an edge key"},
		{"canary project", []string{"keys", "create", "--project", "cdnapi-canary"}, true, "--project cdnapi-canary is reserved"},
		{"unknown key", []string{"keys", "revoke", "key_nope"}, false, "there is no key key_nope"},
		{"not an ID", []string{"keys", "revoke", "cdk_short"}, true, "want a key ID"},
		{"unknown key itself", []string{"keys", "revoke", "cdk_" + strings.Repeat("A", 32)}, false, "no key of this database is cdk_AAAA…"},
		{"no verb", []string{"keys"}, true, "want create"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stdout, _, err := runCmd(t, "", append(tt.args, "--db", db)...)
			if err == nil || errors.Is(err, errUsage) != tt.usage || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v (usage %v), want one containing %q (usage %v)", err, errors.Is(err, errUsage), tt.want, tt.usage)
			}
			if stdout != "" {
				t.Errorf("a failed command printed %q on stdout", stdout)
			}
		})
	}
}
