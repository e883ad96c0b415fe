package genclients

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestGeneratedCodeIsCurrent runs the go:generate lines of generate.go into a
// temporary directory and fails when the result differs from the committed
// code: a change of api/openapi.yaml that a generator cannot take, or that
// changes the clients, shows here, and is committed with the document.
func TestGeneratedCodeIsCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs both generators")
	}
	src, err := os.ReadFile("generate.go")
	if err != nil {
		t.Fatal(err)
	}
	lines := regexp.MustCompile(`(?m)^//go:generate (.+)$`).FindAllSubmatch(src, -1)
	if len(lines) != 2 {
		t.Fatalf("generate.go has %d go:generate lines, want 2", len(lines))
	}
	out := t.TempDir()
	spec, err := filepath.Abs("../../api/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range lines {
		args := strings.Fields(string(line[1]))
		for i, a := range args {
			switch {
			case a == "../../api/openapi.yaml":
				args[i] = spec
			case i > 0 && (args[i-1] == "-o" || args[i-1] == "-target"):
				args[i] = filepath.Join(out, a)
			}
		}
		if err := os.MkdirAll(filepath.Join(out, "oapiclient"), 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(args[0], args[1:]...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: %v\n%s", line[1], err, stderr.Bytes())
		}
	}
	for _, dir := range []string{"oapiclient", "ogenclient"} {
		want := readDir(t, filepath.Join(out, dir))
		got := readDir(t, dir)
		for _, name := range slices.Sorted(mapsKeys(want, got)) {
			switch w, g, inGot := want[name], got[name], hasKey(got, name); {
			case !inGot:
				t.Errorf("%s/%s: the generator makes it, but it is not committed; run go generate in internal/genclients", dir, name)
			case !hasKey(want, name):
				t.Errorf("%s/%s: committed, but the generator no longer makes it; run go generate in internal/genclients", dir, name)
			case !bytes.Equal(w, g):
				t.Errorf("%s/%s differs from what the generator makes of api/openapi.yaml; run go generate in internal/genclients", dir, name)
			}
		}
	}
}

// readDir returns the files of dir by name.
func readDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = b
	}
	return files
}

func hasKey(m map[string][]byte, k string) bool { _, ok := m[k]; return ok }

// mapsKeys returns the keys of both maps, each once.
func mapsKeys(a, b map[string][]byte) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range a {
			if !yield(k) {
				return
			}
		}
		for k := range b {
			if _, dup := a[k]; !dup && !yield(k) {
				return
			}
		}
	}
}
