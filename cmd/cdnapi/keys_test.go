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
	mustRunCmd(t, "", "keys", "create", "--project", "beta", "--expires-in", "1h", "--db", db)

	out, _ = mustRunCmd(t, "", "keys", "list", "--db", db)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	alpha := regexp.MustCompile(`(?m)^` + id + ` +alpha +"ci deploy" +\S+Z +never +never +-$`)
	beta := regexp.MustCompile(`(?m)^key_\w+ +beta +- +\S+Z +\S+Z +never +-$`)
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ID ") || !alpha.MatchString(out) || !beta.MatchString(out) {
		t.Errorf("keys list printed\n%s", out)
	}
	hash := auth.Hash(key)
	if strings.Contains(out, key) || strings.Contains(out, key[4:]) || strings.Contains(strings.ToLower(out), "sha") ||
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

	for _, tt := range []struct {
		name  string
		args  []string
		usage bool
		want  string
	}{
		{"no project", []string{"keys", "create"}, true, "--project"},
		{"bad project", []string{"keys", "create", "--project", "a b"}, true, "--project"},
		{"negative expiry", []string{"keys", "create", "--project", "a", "--expires-in", "-1h"}, true, "--expires-in"},
		{"unknown key", []string{"keys", "revoke", "key_nope"}, false, "there is no key key_nope"},
		{"not an ID", []string{"keys", "revoke", key}, true, "is not a key ID"},
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
