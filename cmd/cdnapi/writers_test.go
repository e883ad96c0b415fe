package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi/internal/demo"
)

// TestOperatorWaitsForIngest: while a `cdnapi ingest` process holds the
// SQLite write lock (it does for the whole of its input, here a pipe kept
// open), an operator's `cdnapi status set` waits for it instead of failing
// with SQLITE_BUSY, says on stderr that it waits and for which process,
// and sets the status once the ingest has committed.
func TestOperatorWaitsForIngest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "writers.db")
	db := "sqlite:" + path
	mustRunCmd(t, "", "migrate", "--db", db)
	mustRunCmd(t, demoRegionsNDJSON(t), "ingest", "regions", "--db", db)

	ingest := exec.Command(os.Args[0], "--", "ingest", "assets", "--db", db)
	ingest.Env = append(os.Environ(), "CDNAPI_TEST_AS_MAIN=1")
	var ingestErr syncBuffer
	ingest.Stderr = &ingestErr
	in, err := ingest.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := ingest.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ingest.Process.Kill(); ingest.Wait() })
	region := demo.Regions()[0].Code
	for i := range 100 {
		fmt.Fprintf(in, `{"id":"ast_%032x","created_at":"%s","path":"/w/%d","bytes":%d,"cache_status":"HIT","region":"%s"}`+"\n",
			i, time.Now().UTC().Format(time.RFC3339), i, i, region)
	}
	// The ingest holds the lock from its start; it says who it is beside
	// the database once it has held it half a second.
	waitWriters(t, 10*time.Second, "the ingest's holder file", func() bool {
		_, err := os.Stat(path + "-writer")
		return err == nil
	})

	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(context.Background(), []string{"status", "set", "API", "major_outage", "--db", db},
			getenvFrom(nil), strings.NewReader(""), &stdout, &stderr)
	}()
	want := fmt.Sprintf("waiting for another writer: cdnapi ingest assets (pid %d) started writing to writers.db", ingest.Process.Pid)
	waitWriters(t, 10*time.Second, "status set's waiting line", func() bool {
		return strings.Contains(stderr.String(), want)
	})
	select {
	case err := <-done:
		t.Fatalf("status set returned while the ingest held the lock: %v\n%s", err, stderr.String())
	default:
	}

	in.Close() // the ingest reaches the end of its input and commits
	if err := ingest.Wait(); err != nil {
		t.Fatalf("ingest: %v\n%s", err, ingestErr.String())
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("status set: %v\n%s", err, stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("status set still waits after the ingest ended")
	}
	if s := stderr.String(); strings.Contains(s, "SQLITE_BUSY") || strings.Contains(s, "locked") {
		t.Errorf("stderr of status set: %q", s)
	}
	out, _ := mustRunCmd(t, "", "status", "list", "--db", db)
	if !strings.Contains(out, "major_outage") {
		t.Errorf("status list after the wait:\n%s", out)
	}
	t.Logf("status set's stderr: %q", stderr.String())
}

// waitWriters polls ok until it holds, or fails t after timeout.
func waitWriters(t *testing.T, timeout time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s after %s", what, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
