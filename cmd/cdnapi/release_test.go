package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestRelease builds the release binary of this platform with
// scripts/release, checks it against SHA256SUMS, and runs its version
// command, which must show the stamped version and the commit.
func TestRelease(t *testing.T) {
	out := t.TempDir()
	target := runtime.GOOS + "/" + runtime.GOARCH
	cmd := exec.Command("../../scripts/release", out)
	cmd.Env = append(os.Environ(), "VERSION=v0.0.0-releasetest", "TARGETS="+target)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/release: %v\n%s", err, b)
	}
	name := "cdnapi-v0.0.0-releasetest-" + runtime.GOOS + "-" + runtime.GOARCH
	bin := filepath.Join(out, name)
	sums, err := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if want := hex.EncodeToString(sum[:]) + "  " + name + "\n"; string(sums) != want {
		t.Errorf("SHA256SUMS = %q, want %q", sums, want)
	}

	got, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s version: %v\n%s", name, err, got)
	}
	for _, want := range []string{"cdnapi v0.0.0-releasetest\n", "  go        " + runtime.Version() + " " + target + "\n"} {
		if !strings.Contains(string(got), want) {
			t.Errorf("version printed\n%s\nwant %q", got, want)
		}
	}
	// Built from a checkout, the binary knows its commit.
	if _, err := os.Stat("../../.git"); err == nil && strings.Contains(string(got), "revision  unknown") {
		t.Errorf("version printed\n%s\nwant the VCS revision", got)
	}
	if v, err := exec.Command(bin, "--version").Output(); err != nil || string(v) != string(got) {
		t.Errorf("--version printed %q (%v), want what version printed", v, err)
	}
}
