package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// scripts/test runs every stage whatever the ones before did, and lists
// the failures at the end with exit status 1: a failing test once kept the
// generated clients and the fuzz targets from running. Its go and gofmt are
// stand-ins on PATH that fail go vet, the tests and the tests of
// internal/genclients, and record every call, so that the test checks the
// script, not the suite.
func TestScriptTestRunsEveryStage(t *testing.T) {
	bin := t.TempDir()
	calls := filepath.Join(bin, "calls")
	fakeGo := `#!/bin/sh
echo "go $*" >>"$CALLS"
case "$*" in
"env CGO_ENABLED") echo 0 ;;
"env CC") echo cc ;;
"vet ./...") [ "$(basename "$PWD")" = genclients ] || { echo "vet: something"; exit 1; } ;;
"test -list ^Fuzz ./...") printf 'FuzzA\nok  \texample.com/a\t0.1s\nFuzzB\nok  \texample.com/b\t0.1s\n' ;;
"test -count=1 -timeout 30m ./...") echo "--- FAIL: TestStatusStreamInBrowser"; exit 1 ;;
"test -count=1 -timeout 10m ./...") echo "--- FAIL: TestGenerated"; exit 1 ;;
esac
exit 0
`
	for name, text := range map[string]string{"go": fakeGo, "gofmt": "#!/bin/sh\nexit 0\n"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("../../scripts/test")
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "CALLS="+calls, "CDNAPI_FLEET_DRILL=", "FUZZTIME=3s")
	out, err := cmd.CombinedOutput()
	if exitErr, ok := errors.AsType[*exec.ExitError](err); !ok || exitErr.ExitCode() != 1 {
		t.Fatalf("scripts/test: %v, want exit status 1\n%s", err, out)
	}
	want := "\nFAILED: 3 of 5 stages:\n  go vet\n  go test\n  generated clients (internal/genclients)\n"
	if !strings.HasSuffix(string(out), want) {
		t.Errorf("scripts/test ended\n%s\nwant it to end with%s", out, want)
	}
	log, err := os.ReadFile(calls)
	if err != nil {
		t.Fatal(err)
	}
	for _, call := range []string{
		"go vet ./...",
		"go test -count=1 -timeout 30m ./...",
		"go test -count=1 -timeout 10m ./...",
		"go test -run ^$ -fuzz ^FuzzA$ -fuzztime 3s example.com/a",
		"go test -run ^$ -fuzz ^FuzzB$ -fuzztime 3s example.com/b",
	} {
		if !strings.Contains(string(log), call+"\n") {
			t.Errorf("scripts/test never ran %q; it ran:\n%s", call, log)
		}
	}
}
