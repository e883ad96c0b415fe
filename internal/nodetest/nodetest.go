// Package nodetest runs, in tests, the JavaScript libraries that others
// use to read what cdnapi serves (testdata/npm: an Atom reader, the
// Standard Webhooks verifier), at the versions its package-lock.json pins.
// A test that needs them fails, never skips, when node or npm is missing:
// .ci/run installs npm.
package nodetest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// Dir returns testdata/npm with its node_modules installed. The first call
// on a machine runs npm ci, from npm's cache when it holds the packages;
// processes testing several packages at once take turns under a file lock,
// and a node_modules newer than the lock file is reused.
func Dir(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "testdata", "npm")
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed: the tests of testdata/npm's readers need it (.ci/run installs npm)", tool)
		}
	}
	lock, err := os.OpenFile(filepath.Join(os.TempDir(), "cdnapi-nodetest.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if installed(dir) {
		return dir
	}
	cmd := exec.CommandContext(t.Context(), "npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = dir
	cmd.WaitDelay = time.Second
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
	}
	return dir
}

// installed reports whether npm has installed dir's lock file since it
// last changed.
func installed(dir string) bool {
	lock, err := os.Stat(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		return false
	}
	done, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json"))
	return err == nil && done.ModTime().After(lock.ModTime())
}

// Run runs the JavaScript script with node in Dir, where require finds the
// pinned libraries, with stdin as its input and args as process.argv[1:],
// and returns what it wrote to standard output. A script that exits with
// an error fails the test, with what it wrote to standard error.
func Run(t testing.TB, script string, stdin []byte, args ...string) []byte {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "node", append([]string{"-e", script, "--"}, args...)...)
	cmd.Dir = Dir(t)
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.WaitDelay = time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.Bytes())
	}
	return stdout.Bytes()
}
