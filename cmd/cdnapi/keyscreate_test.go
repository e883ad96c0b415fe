package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/cdnapi/cdnapi/internal/auth"
)

// TestKeysCreateWarnsOnEmptyProject checks that a key made for a project
// that holds no files, as a typo in its case makes one, is made (exit 0)
// with a warning on stderr, which --quiet silences; a key of a project
// with files gets none.
func TestKeysCreateWarnsOnEmptyProject(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "keys.db")
	mustRunCmd(t, "", "seed", "--files", "3", "--assets", "0", "--db", db) // files of project "default"
	for _, tc := range []struct {
		args []string
		warn bool
	}{
		{[]string{"--project", "Default"}, true},
		{[]string{"--project", "nothing-here"}, true},
		{[]string{"--project", "Default", "--quiet"}, false},
		{[]string{"--project", "default"}, false},
	} {
		out, errOut := mustRunCmd(t, "", append([]string{"keys", "create", "--db", db}, tc.args...)...)
		if !auth.WellFormed(strings.TrimSpace(out)) {
			t.Errorf("%v: stdout %q, want the key", tc.args, out)
		}
		if got := strings.Contains(errOut, "warning: project") && strings.Contains(errOut, "case-sensitive"); got != tc.warn {
			t.Errorf("%v: warned %v, want %v; stderr:\n%s", tc.args, got, tc.warn, errOut)
		}
	}
}
