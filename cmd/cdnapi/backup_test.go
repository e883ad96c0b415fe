package main

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/apitest"
	"github.com/cdnapi/cdnapi/internal/sqlite"
)

// TestBackupWhileServing backs up a database that serve is serving while
// another process writes a file per transaction, and checks that the
// writes went on during the backup, that the copy holds one snapshot (the
// written files up to some point, with no gap), and that the copy serves.
func TestBackupWhileServing(t *testing.T) {
	dir := t.TempDir()
	db := "sqlite:" + filepath.Join(dir, "live.db")
	mustRunCmd(t, "", "seed", "--db", db, "--files", "20000", "--assets", "20000")
	srv := startServe(t, nil, "--db", db)
	v := apitest.NewValidator(t)

	writer, err := sqlite.Open(t.Context(), strings.TrimPrefix(db, "sqlite:"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	var written atomic.Int64
	stop := make(chan struct{})
	writeErr := make(chan error, 1) // the writer's end: nil once stopped
	go func() {
		at := time.Now().UTC().Truncate(time.Second)
		for i := int64(1); ; i++ {
			select {
			case <-stop:
				writeErr <- nil
				return
			default:
			}
			f := cdnapi.File{ID: fmt.Sprintf("fil_W%06d", i), Project: "default", CreatedAt: at, Filename: "w.bin",
				Bytes: i, Checksum: "sha256:" + strings.Repeat("cd", 32)}
			if err := writer.Write(t.Context(), func(w cdnapi.Writer) error {
				return w.PutFiles(t.Context(), []cdnapi.File{f})
			}); err != nil {
				writeErr <- err
				return
			}
			written.Store(i)
		}
	}()
	for written.Load() < 10 {
		select {
		case err := <-writeErr:
			t.Fatalf("the writer failed before the backup: %v", err)
		case <-time.After(time.Millisecond):
		}
	}

	copyPath := filepath.Join(dir, "copy.db")
	before := written.Load()
	out, _ := mustRunCmd(t, "", "backup", "--db", db, copyPath)
	during := written.Load() - before
	close(stop)
	if err := <-writeErr; err != nil {
		t.Fatalf("the writer failed during the backup: %v", err)
	}
	if !strings.HasPrefix(out, "backed up ") {
		t.Errorf("backup printed %q", out)
	}
	t.Logf("%s%d transactions committed during the backup", out, during)
	if during == 0 {
		t.Error("no write committed while the backup ran: it held the writers back")
	}
	if res, _ := get(t, v, srv.api+"/api/v1/files?limit=5"); res.StatusCode != http.StatusOK {
		t.Errorf("the served list answers %d after the backup", res.StatusCode)
	}

	backup, err := sqlite.Open(t.Context(), copyPath, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	files, err := backup.ListFiles(t.Context(), cdnapi.FileQuery{Project: "default", Limit: 1 << 20})
	backup.Close()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, f := range files {
		if strings.HasPrefix(f.ID, "fil_W") {
			got[f.ID] = true
		}
	}
	for i := 1; i <= len(got); i++ {
		if id := fmt.Sprintf("fil_W%06d", i); !got[id] {
			t.Fatalf("the copy has %d written files but not %s: not one snapshot", len(got), id)
		}
	}
	if n := int64(len(got)); n < before || n > written.Load() {
		t.Errorf("the copy has %d written files; %d were committed before it began, %d by the end", n, before, written.Load())
	}
	if len(files)-len(got) != 20000 {
		t.Errorf("the copy has %d seeded files, want 20000", len(files)-len(got))
	}

	restored := startServe(t, nil, "--db", "sqlite:"+copyPath)
	if res, body := get(t, v, restored.api+"/api/v1/files?limit=1"); res.StatusCode != http.StatusOK || !strings.Contains(string(body), "fil_") {
		t.Errorf("serve on the copy: %d %s", res.StatusCode, body)
	}
}

func TestBackupRefuses(t *testing.T) {
	dir := t.TempDir()
	db := "sqlite:" + filepath.Join(dir, "a.db")
	mustRunCmd(t, "", "migrate", "--db", db)
	existing := filepath.Join(dir, "taken.db")
	mustRunCmd(t, "", "backup", "--db", db, existing)
	tests := []struct {
		name  string
		args  []string
		usage bool
		want  string
	}{
		{"no path", []string{"backup", "--db", db}, true, "want the PATH of the copy"},
		{"two paths", []string{"backup", "--db", db, "x", "y"}, true, "want the PATH of the copy"},
		{"postgres", []string{"backup", "--db", "postgres://cdnapi@db/cdnapi", filepath.Join(dir, "p.db")}, true, "pg_dump --format=custom"},
		{"no database", []string{"backup", "--db", filepath.Join(dir, "none.db"), filepath.Join(dir, "n.db")}, true, "no database at " + filepath.Join(dir, "none.db")},
		{"copy exists", []string{"backup", "--db", db, existing}, false, "taken.db exists; give a new path"},
		// A missing directory is made (TestBackupREADMEExamples); a file
		// in the way of one is named.
		{"a file for a directory", []string{"backup", "--db", db, filepath.Join(existing, "c.db")}, false, existing + " is not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := runCmd(t, "", tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one that says %q", err, tt.want)
			}
			if _, isUsage := err.(usageError); isUsage != tt.usage {
				t.Errorf("usage error: %v, want %v", isUsage, tt.usage)
			}
		})
	}
	if matches, _ := filepath.Glob(filepath.Join(dir, ".*.tmp")); len(matches) > 0 {
		t.Errorf("temporary files left behind: %v", matches)
	}
}
