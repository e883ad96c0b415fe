package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The files of deploy/, as an operator installs them.
const (
	unitFile = "../../deploy/cdnapi.service"
	envFile  = "../../deploy/cdnapi.env"
)

// TestSystemdUnit checks deploy/cdnapi.service: it has the hardening the
// issue asks for, systemd-analyze verify finds nothing wrong with it, and
// systemd-analyze security rates its exposure at 2.0 or better ("OK").
func TestSystemdUnit(t *testing.T) {
	unit, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	keys := unitKeys(t, unit)
	for _, tt := range []struct{ key, want string }{
		{"DynamicUser", "yes"},
		{"ProtectSystem", "strict"},
		{"StateDirectory", "cdnapi"},
		{"NoNewPrivileges", "yes"},
		{"EnvironmentFile", "/etc/cdnapi/cdnapi.env"},
		{"ExecStart", "/usr/local/bin/cdnapi serve"},
		{"Environment", "CDNAPI_DB=sqlite:/var/lib/cdnapi/cdnapi.db"}, // in the state directory
		{"WorkingDirectory", "/var/lib/cdnapi"},
	} {
		if got := keys[tt.key]; len(got) != 1 || got[0] != tt.want {
			t.Errorf("%s = %q, want %q", tt.key, got, tt.want)
		}
	}

	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("systemd-analyze is required when CI=true (Debian's systemd package): %v", err)
		}
		t.Skipf("systemd-analyze is not installed (Debian's systemd package): %v", err)
	}
	// verify checks that ExecStart's program exists; this test's binary
	// stands in for /usr/local/bin/cdnapi.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	unitCopy := filepath.Join(t.TempDir(), "cdnapi.service")
	if err := os.WriteFile(unitCopy, bytes.ReplaceAll(unit, []byte("/usr/local/bin/cdnapi"), []byte(self)), 0o644); err != nil {
		t.Fatal(err)
	}
	// verify exits 0 on an unknown key (it only warns), so any output fails.
	if out, err := exec.Command(analyze, "verify", "--man=no", unitCopy).CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	out, err := exec.Command(analyze, "security", "--offline=yes", "--threshold=20", "--no-pager", unitCopy).CombinedOutput()
	if err != nil {
		t.Errorf("systemd-analyze security --threshold=20 (an exposure above 2.0): %v\n%s", err, out)
	}
	if i := bytes.Index(out, []byte("Overall exposure level")); i >= 0 {
		t.Logf("%s", bytes.TrimSpace(out[i:]))
	}
}

// TestDeployEnvFile checks that every variable of deploy/cdnapi.env, the
// commented-out examples too, names a flag of serve, and that serve accepts
// the file's values together with the unit's command line.
func TestDeployEnvFile(t *testing.T) {
	f, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(f))
	for sc.Scan() {
		line := strings.TrimPrefix(strings.TrimSpace(sc.Text()), "#")
		name, value, ok := strings.Cut(line, "=")
		if ok && strings.HasPrefix(name, "CDNAPI_") && !strings.Contains(name, " ") {
			vars[name] = value
		}
	}
	if len(vars) < 5 {
		t.Fatalf("found %d CDNAPI_ variables in %s: %v", len(vars), envFile, vars)
	}
	var help bytes.Buffer
	if _, err := parseServeConfig(&environment{getenv: getenvFrom(nil), stdout: &help}, []string{"--help"}); err == nil {
		t.Fatal("serve --help did not stop")
	}
	for name := range vars {
		flagName := strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(name, "CDNAPI_")), "_", "-")
		if !strings.Contains(help.String(), fmt.Sprintf("  -%s ", flagName)) && !strings.Contains(help.String(), fmt.Sprintf("  -%s\n", flagName)) {
			t.Errorf("%s: serve has no flag --%s", name, flagName)
		}
	}
	if vars["CDNAPI_CURSOR_SECRET"] == "" {
		delete(vars, "CDNAPI_CURSOR_SECRET") // an empty example; unset, as it ships
	}
	cfg, err := parseServeConfig(&environment{getenv: getenvFrom(vars), stdout: &help}, nil)
	if err != nil {
		t.Fatalf("serve refuses %s: %v", envFile, err)
	}
	if cfg.apiAddr != vars["CDNAPI_API_ADDR"] || *cfg.db.dsn != vars["CDNAPI_DB"] {
		t.Errorf("serve took --api-addr %q and --db %q from the file", cfg.apiAddr, *cfg.db.dsn)
	}
}

// unitKeys returns the values of each key of a unit file, in order.
func unitKeys(t *testing.T, unit []byte) map[string][]string {
	t.Helper()
	keys := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(unit))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '[' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("unit line %q is not KEY=VALUE", line)
		}
		keys[k] = append(keys[k], v)
	}
	return keys
}
