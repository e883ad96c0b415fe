//go:build linux

package origin_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi/internal/origin"
	"github.com/cdnapi/cdnapi/internal/teststore"
)

// nobody is the unprivileged user the swapper runs as.
const nobody = 65534

// asNobody runs the shell script as the user nobody, in a process of its
// own, and returns its combined output.
func asNobody(t *testing.T, script string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("/bin/sh", append([]string{"-c", script, "sh"}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// needRoot ends t unless euid is root's: skipped, but failed under
// CI=true, as a missing nginx or Redis is (CI runs as root), so that CI
// never passes without the race having run.
func needRoot(t testing.TB, euid int, ci string) {
	t.Helper()
	if euid == 0 {
		return
	}
	if ci == "true" {
		t.Fatalf("the sync must run as root, and the swapper as nobody: CI=true runs as root, this is uid %d", euid)
		return
	}
	t.Skip("the sync must run as root, and the swapper as nobody: run as root")
}

// TestNeedRoot: as root the race runs; otherwise it skips, and under
// CI=true it fails.
func TestNeedRoot(t *testing.T) {
	for _, c := range []struct {
		euid                 int
		ci                   string
		wantSkip, wantFailed bool
	}{
		{0, "", false, false},
		{0, "true", false, false},
		{1000, "", true, false},
		{1000, "false", true, false},
		{1000, "true", false, true},
	} {
		r := &rootRecorder{}
		needRoot(r, c.euid, c.ci)
		if r.skipped != c.wantSkip || r.failed != c.wantFailed {
			t.Errorf("uid %d, CI=%q: skipped %v, failed %v; want %v, %v", c.euid, c.ci, r.skipped, r.failed, c.wantSkip, c.wantFailed)
		}
	}
}

// rootRecorder stands in for a testing.TB, to see how needRoot ends a
// test; it has only the methods needRoot calls.
type rootRecorder struct {
	testing.TB
	skipped, failed bool
}

func (r *rootRecorder) Helper()               {}
func (r *rootRecorder) Skip(...any)           { r.skipped = true }
func (r *rootRecorder) Fatalf(string, ...any) { r.failed = true }

// TestSwapToOutsideFolder is the race of issue 36: someone who can write
// into the origin, but is not root, swaps a folder of it for a symbolic
// link to a root-only folder between the walk (which saw a file in the
// folder) and the read of that file, by a sync running as root. The file
// outside must never be listed. The swap is made deterministic by a hook
// that runs the unprivileged swapper just before the file would be opened
// (settled), or while a new file waits to settle (fresh): then the sync's
// second look at the path, by its name, must not go through the link
// either. Each case runs with openat2 and, as on kernels without it, with
// openat one name at a time.
func TestSwapToOutsideFolder(t *testing.T) {
	needRoot(t, os.Geteuid(), os.Getenv("CI"))
	for _, tc := range []struct {
		name    string
		fresh   bool // sub/target.txt is still settling when the walk sees it
		openat2 bool
	}{{"settled", false, true}, {"fresh", true, true}, {"settled without openat2", false, false}, {"fresh without openat2", true, false}} {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.openat2 {
				origin.WithoutOpenat2(t)
			}
			base := t.TempDir()
			for _, d := range []string{filepath.Dir(base), base} {
				if err := os.Chmod(d, 0o711); err != nil { // nobody may pass, not list
					t.Fatal(err)
				}
			}
			secret := filepath.Join(base, "secret")
			writeFile(t, secret, "target.txt", "root only: the contents of a secret file\n")
			if err := os.Chmod(secret, 0o700); err != nil {
				t.Fatal(err)
			}
			root := filepath.Join(base, "origin")
			writeFile(t, root, "other.txt", "another file of the origin\n")
			writeFile(t, root, "sub/target.txt", "public")
			if tc.fresh {
				now := time.Now()
				os.Chtimes(filepath.Join(root, "sub/target.txt"), now, now)
			}
			for _, p := range []string{root, filepath.Join(root, "sub"), filepath.Join(root, "sub/target.txt")} {
				if err := os.Chown(p, nobody, nobody); err != nil {
					t.Fatal(err)
				}
			}
			if out, err := asNobody(t, `cat "$1"`, filepath.Join(secret, "target.txt")); err == nil {
				t.Fatalf("nobody can read the secret file (%q): the test proves nothing", out)
			}

			// The file whose hashing is the moment to swap.
			at := "sub/target.txt"
			if tc.fresh {
				at = "other.txt" // hashed in the first pass, while sub/target.txt settles
			}
			st := teststore.SQLite(t)
			s, err := origin.New(st, root, origin.Options{Project: project, Workers: 1, Warn: func(m string) { t.Log(m) }})
			if err != nil {
				t.Fatal(err)
			}
			swapped := false
			origin.SetBeforeHash(s, func(rel string) {
				if rel != at || swapped {
					return
				}
				swapped = true
				if out, err := asNobody(t, `mv "$1/sub" "$1/sub.old" && ln -s "$2" "$1/sub"`, root, secret); err != nil {
					t.Errorf("the swap as nobody: %v: %s", err, out)
				}
			})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if _, err := s.Sync(ctx); err != nil {
				t.Fatal(err)
			}
			if !swapped {
				t.Fatal("the swap never ran")
			}
			if target, err := os.Readlink(filepath.Join(root, "sub")); err != nil || target != secret {
				t.Fatalf("sub is not the link to the secret folder after the sync: %q, %v", target, err)
			}
			secretSum := sha256sum(t, secret, "target.txt")["target.txt"]
			for name, f := range listed(t, st) {
				if f.Checksum == secretSum || strings.HasPrefix(name, "sub/") {
					t.Errorf("%q is listed (%d bytes, %s): the secret file, read through the link", name, f.Bytes, f.Checksum)
				}
			}
		})
	}
}

// TestReplacedSinceTheWalk: a file replaced by another between the walk and
// its read (another inode at the same path) is not read in that pass, but
// looked at again, and listed with what it holds then.
func TestReplacedSinceTheWalk(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root, "sub/target.txt", "the file the walk saw")
	elsewhere := t.TempDir() // on the same file system, outside the origin
	writeFile(t, elsewhere, "replacement", "another file, put in its place")
	st := teststore.SQLite(t)
	var warned []string
	s, err := origin.New(st, root, origin.Options{Project: project, Workers: 1, Warn: func(m string) { warned = append(warned, m) }})
	if err != nil {
		t.Fatal(err)
	}
	replaced := false
	origin.SetBeforeHash(s, func(rel string) {
		if rel == "sub/target.txt" && !replaced {
			replaced = true
			if err := os.Rename(filepath.Join(elsewhere, "replacement"), filepath.Join(root, "sub/target.txt")); err != nil {
				t.Error(err)
			}
		}
	})
	if _, err := s.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(warned, func(m string) bool { return strings.Contains(m, `"sub/target.txt" was replaced since the walk`) }) {
		t.Errorf("warnings %q; want one that sub/target.txt was replaced", warned)
	}
	checkListed(t, st, root, sha256sum(t, root, "sub/target.txt"))
}
