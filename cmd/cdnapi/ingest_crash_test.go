package main

import (
	"bytes"
	"database/sql"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi/internal/pgtest"
)

// crashLines is the size of the input the crash test kills an ingest of:
// large enough that the ingest writes for a good while.
const crashLines = 300_000

// TestIngestSurvivesKill kills `cdnapi ingest assets`, a process of its own,
// with SIGKILL once it has written part of a large input inside its one
// transaction. The store must hold either none of the input or all of it,
// never part; the same command run again must then complete it.
func TestIngestSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 300,000 assets twice")
	}
	path, ids := writeAssetFile(t, crashLines, time.Now().UTC())
	slices.Sort(ids)
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	engines := []struct {
		name string
		dsn  func(t *testing.T) (dsn string, sqlitePath string)
	}{
		{"sqlite", func(t *testing.T) (string, string) {
			db := migratedDB(t, "crash.db")
			return db, strings.TrimPrefix(db, "sqlite:")
		}},
		{"postgres", func(t *testing.T) (string, string) { return pgtest.NewDatabase(t), "" }},
	}
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			dsn, sqlitePath := e.dsn(t)
			mustRunCmd(t, demoRegionsNDJSON(t), "ingest", "regions", "--db", dsn)

			cmd := exec.Command(os.Args[0], "--", "ingest", "assets", "--db", dsn, path)
			cmd.Env = append(os.Environ(), "CDNAPI_TEST_AS_MAIN=1")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Once the child has read a third of the file, it has handed
			// all but the two batches in flight to the store: it is
			// writing. Then kill it without warning.
			read := waitForRead(t, cmd.Process.Pid, path, info.Size()/3)
			cmd.Process.Kill()
			cmd.Wait()
			t.Logf("killed the ingest after it read %d of %d bytes; it printed %q", read, info.Size(), stderr.String())

			if sqlitePath != "" {
				checkIntegrity(t, sqlitePath)
			}
			switch got := storedAssetIDs(t, dsn); {
			case len(got) == 0:
			case slices.Equal(got, ids):
				t.Log("the ingest had committed before the kill landed")
			default:
				t.Fatalf("after the kill the store holds %d of the %d assets: a half-written ingest", len(got), len(ids))
			}

			mustRunCmd(t, "", "ingest", "assets", "--db", dsn, path)
			if got := storedAssetIDs(t, dsn); !slices.Equal(got, ids) {
				t.Fatalf("after the second run the store holds %d assets, want all %d", len(got), len(ids))
			}
		})
	}
}

// waitForRead waits until process pid has read at least n bytes of the file
// at path, as the offset of its descriptor in /proc shows, and returns the
// offset. It fails t if the process ends first or takes a minute.
func waitForRead(t *testing.T, pid int, path string, n int64) int64 {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err != nil {
			t.Fatalf("the ingest ended before it had read %d bytes", n)
		}
		fds, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
		for _, fd := range fds {
			target, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/" + fd.Name())
			if err != nil || target != path {
				continue
			}
			info, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/fdinfo/" + fd.Name())
			if err != nil {
				continue
			}
			for _, line := range strings.Split(string(info), "\n") {
				if pos, ok := strings.CutPrefix(line, "pos:"); ok {
					if off, _ := strconv.ParseInt(strings.TrimSpace(pos), 10, 64); off >= n {
						return off
					}
				}
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("the ingest did not read %d bytes within a minute", n)
	return 0
}

// checkIntegrity runs SQLite's own consistency check on the database file.
func checkIntegrity(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var result string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&result); err != nil || result != "ok" {
		t.Fatalf("integrity_check = %q, %v", result, err)
	}
}
