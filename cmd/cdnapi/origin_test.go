package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/origin"
	"github.com/cdnapi/cdnapi/internal/pgtest"
)

// originFiles returns every file of project in the store at dsn, sorted by
// ID, as text that compares whole rows.
func originFiles(t *testing.T, dsn, project string) []string {
	t.Helper()
	st := openTestStore(t, dsn)
	var rows []string
	var after *cdnapi.Position
	for {
		page, err := st.ListFiles(t.Context(), cdnapi.FileQuery{Project: project, After: after, Limit: 5000})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range page {
			rows = append(rows, fmt.Sprintf("%s %s %s %d %s", f.ID, cdnapi.Timestamp(f.CreatedAt), f.Filename, f.Bytes, f.Checksum))
		}
		if len(page) < 5000 {
			break
		}
		p := page[len(page)-1].Position()
		after = &p
	}
	slices.Sort(rows)
	return rows
}

// writeTree writes files first… first+n-1 under root, with content that
// depends on version, dated about an hour ago (long settled), a second
// later for each version. A sync tells a file changed by its size and its
// time to the second, which a real write moves; dating two versions of the
// same size "an hour ago" within one second would make them the same file
// to it.
func writeTree(t *testing.T, root string, first, n, version int) {
	t.Helper()
	when := time.Now().Add(-time.Hour).Truncate(time.Second).Add(time.Duration(version) * time.Second)
	for i := first; i < first+n; i++ {
		p := filepath.Join(root, fmt.Sprintf("d%02d", i%20), fmt.Sprintf("f%05d.bin", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		content := bytes.Repeat([]byte(fmt.Sprintf("file %d version %d\n", i, version)), 200+i%500)
		if err := os.WriteFile(p, content, 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, when, when)
	}
}

// TestOriginSurvivesKill kills `cdnapi origin sync`, a process of its own,
// with SIGKILL while it writes a changed tree (files added, changed and
// removed) in batches; the same command run again must leave the list
// exactly as a sync into an empty database makes it.
func TestOriginSurvivesKill(t *testing.T) {
	engines := []struct {
		name string
		dsn  func(t *testing.T) (dsn string, sqlitePath string)
	}{
		{"sqlite", func(t *testing.T) (string, string) {
			dsn := migratedDB(t, "crash.db")
			return dsn, strings.TrimPrefix(dsn, "sqlite:")
		}},
		{"postgres", func(t *testing.T) (string, string) { return pgtest.NewDatabase(t), "" }},
	}
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			root := t.TempDir()
			writeTree(t, root, 0, 1000, 1)
			dsn, sqlitePath := e.dsn(t)
			mustRunCmd(t, "", "origin", "sync", "--db", dsn, "--project", "site", root)
			if n := len(originFiles(t, dsn, "site")); n != 1000 {
				t.Fatalf("the first sync listed %d files, want 1000", n)
			}

			for i := range 200 { // removed
				os.Remove(filepath.Join(root, fmt.Sprintf("d%02d", i%20), fmt.Sprintf("f%05d.bin", i)))
			}
			writeTree(t, root, 200, 200, 2)   // changed
			writeTree(t, root, 1000, 3000, 1) // added

			cmd := exec.Command(os.Args[0], "--", "origin", "sync", "--db", dsn, "--project", "site",
				"--batch-files", "50", "--workers", "1", root)
			cmd.Env = append(os.Environ(), "CDNAPI_TEST_AS_MAIN=1")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Kill it once it has committed a batch of the new files.
			var seen int
			for deadline := time.Now().Add(30 * time.Second); ; {
				if seen = len(originFiles(t, dsn, "site")); seen > 1000 || time.Now().After(deadline) {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			cmd.Process.Kill()
			cmd.Wait()
			t.Logf("killed the sync once the list held %d files (of 3,800 at the end); it printed %q", seen, stderr.String())
			if sqlitePath != "" {
				checkIntegrity(t, sqlitePath)
			}
			if seen <= 1000 || seen >= 4000 {
				t.Fatalf("the sync was killed with %d files listed, not midway", seen)
			}

			_, out := mustRunCmd(t, "", "origin", "sync", "--db", dsn, "--project", "site", root)
			t.Logf("the run after the kill: %s", strings.TrimSpace(out))
			ref := migratedDB(t, "ref.db")
			mustRunCmd(t, "", "origin", "sync", "--db", ref, "--project", "site", root)
			got, want := originFiles(t, dsn, "site"), originFiles(t, ref, "site")
			if len(want) != 3800 {
				t.Fatalf("the reference sync listed %d files, want 3,800", len(want))
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("after the kill and a second run the list holds %d files, differing from a fresh sync's %d", len(got), len(want))
			}
			if _, out := mustRunCmd(t, "", "origin", "sync", "--db", dsn, "--project", "site", root); !strings.Contains(out, " 0 rows written, 0 deleted") {
				t.Errorf("a third run: %q; want 0 rows written, 0 deleted", out)
			}
		})
	}
}

// TestOriginCommand: the command's summary, and its refusals of bad input,
// each before anything is written.
func TestOriginCommand(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, 0, 3, 1)
	db := migratedDB(t, "origin.db")
	_, out := mustRunCmd(t, "", "origin", "sync", root, "--db", db, "--project", "site")
	if !strings.HasPrefix(out, "synced 3 files in ") || !strings.Contains(out, ": 0 unchanged (not read), 3 hashed (") ||
		!strings.HasSuffix(out, ", 3 rows written, 0 deleted\n") {
		t.Errorf("first run printed %q", out)
	}
	_, out = mustRunCmd(t, "", "origin", "sync", root, "--db", db, "--project", "site")
	if !strings.Contains(out, ": 3 unchanged (not read), 0 hashed (0 B, ") || !strings.HasSuffix(out, ", 0 rows written, 0 deleted\n") {
		t.Errorf("second run printed %q", out)
	}
	file := filepath.Join(root, "d00", "f00000.bin")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"origin"}, "want sync DIR"},
		{[]string{"origin", "sync"}, "want sync DIR"},
		{[]string{"origin", "sync", root}, "--project is required"},
		{[]string{"origin", "sync", root, "--project", "-bad"}, "--project must be"},
		{[]string{"origin", "sync", root, "--project", "p", "--batch-files", "0"}, "--batch-files"},
		{[]string{"origin", "sync", filepath.Join(root, "missing"), "--project", "p"}, "no such file or directory"},
		{[]string{"origin", "sync", file, "--project", "p"}, "is not a folder"},
	} {
		_, _, err := runCmd(t, "", append(tc.args, "--db", db)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v; want an error saying %q", tc.args, err, tc.want)
		}
	}
	if n := len(originFiles(t, db, "site")); n != 3 {
		t.Errorf("after the refusals the list holds %d files, want 3", n)
	}
}

// The live line of origin sync: files found and hashed, bytes and MiB/s,
// then, once the walk is done, the share hashed and an ETA; a warning
// clears it first. Elsewhere than on a terminal only the summary shows.
func TestOriginProgressLine(t *testing.T) {
	var p origin.Progress
	p.Files.Store(2500)
	p.Hashed.Store(1200)
	p.HashedBytes.Store(200 << 20)
	var out bytes.Buffer
	start := time.Now()
	op := &originProgress{w: &out, p: &p, start: start}
	op.draw(start.Add(2 * time.Second))
	if want := "\r\033[K2,500 files  1,200 hashed  200 MiB  100 MiB/s"; out.String() != want {
		t.Errorf("during the walk drew %q, want %q", out.String(), want)
	}
	out.Reset()
	p.WalkDone.Store(true)
	p.QueuedBytes.Store(800 << 20)
	op.draw(start.Add(2 * time.Second))
	if want := "\r\033[K2,500 files  1,200 hashed  200 MiB  100 MiB/s   25%  ETA 6s"; out.String() != want {
		t.Errorf("after the walk drew %q, want %q", out.String(), want)
	}
	out.Reset()
	op.println("skipped bad\\xffname: not UTF-8")
	if want := "\r\033[Kskipped bad\\xffname: not UTF-8\n"; out.String() != want {
		t.Errorf("println wrote %q, want %q (the live line cleared first)", out.String(), want)
	}

	out.Reset()
	quiet := startOriginProgress(&out, &p) // not a terminal
	time.Sleep(3 * progressInterval)
	quiet.finish("synced 2,500 files")
	if out.String() != "synced 2,500 files\n" {
		t.Errorf("off a terminal it wrote %q, want the summary alone", out.String())
	}
}
