package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/apitest"
	"github.com/cdnapi/cdnapi/internal/pgtest"
	"github.com/cdnapi/cdnapi/internal/postgres"
	"github.com/cdnapi/cdnapi/internal/storetest"
)

// The data of TestReplica. The file count is not a multiple of the walk's
// limit, so the walk ends on a partial page.
const (
	replicaFiles     = 300
	replicaAssets    = 300
	replicaWalkLimit = 7
	replicaSeedNow   = "2026-11-20T12:00:00Z"
	// replicaPoll bounds every wait for the system to reach a state:
	// replication, a status evaluation, a reconnect. Each takes well under
	// a second here; the margin is for a loaded 2-core machine.
	replicaPoll = 15 * time.Second
)

// TestReplica runs cdnapi as it scales out: two `cdnapi serve` processes
// that write to a primary and read the lists from a streaming replica. It
// checks that their cursors are interchangeable, that writes reach the
// lists through the replica, that reads survive the loss of either server
// (from the primary while the replica is down, from the replica while the
// primary is), and that losing both is a clean, honest 503 that heals by
// itself when a server returns.
func TestReplica(t *testing.T) {
	primary := pgtest.Start(t) // our own clusters: this test stops the replica
	replica := primary.StartReplica(t)
	dbname := replica.CreateDatabase(t)
	primaryDSN, replicaDSN := primary.DSN(dbname), replica.DSN(dbname)
	v := apitest.NewValidator(t)
	t.Logf("primary on 127.0.0.1:%d, replica on 127.0.0.1:%d", primary.Port(), replica.Port()) // to tell them apart in the processes' logs

	// Both processes start at once on an empty database: they race to
	// migrate (an advisory lock serialises them) and to create the cursor
	// secret (one insert wins, both read it back).
	procs := startChildren(t, 2, "--db", primaryDSN, "--db-read", replicaDSN)

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	err := run(ctx, []string{"seed", "--db", primaryDSN, "--files", fmt.Sprint(replicaFiles),
		"--assets", fmt.Sprint(replicaAssets), "--seed", "7", "--now", replicaSeedNow},
		getenvFrom(nil), strings.NewReader(""), io.Discard, io.Discard)
	if err != nil {
		t.Fatalf("seed: %v", err)
	}
	if err := replica.WaitReplay(ctx); err != nil {
		t.Fatal(err)
	}
	writer, err := postgres.Open(ctx, primaryDSN, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	// The truth the walks are held to: the list as the primary has it.
	want, err := writer.ListFiles(ctx, cdnapi.FileQuery{Project: "default", Limit: replicaFiles + 1})
	if err != nil || len(want) != replicaFiles {
		t.Fatalf("the primary lists %d files, %v; want %d", len(want), err, replicaFiles)
	}

	var page2Cursor string // taken on page 1 of the walk, replayed after a write
	var page2 []string
	walked := t.Run("cursors cross processes", func(t *testing.T) {
		var got []string
		cursor := ""
		for page := 0; page == 0 || cursor != ""; page++ {
			if page > replicaFiles {
				t.Fatal("the walk does not end")
			}
			p := procs[page%2] // each cursor goes to the process that did not make it
			ids, next := filesPage(t, v, p.api, replicaWalkLimit, cursor)
			if page == 1 {
				page2Cursor, page2 = cursor, ids
			}
			got = append(got, ids...)
			cursor = next
		}
		if !slices.Equal(got, fileIDs(want)) {
			t.Fatalf("the walk across both processes returned %d files that differ from the primary's %d in order or content",
				len(got), len(want))
		}
	})
	if !walked {
		t.FailNow() // the later checks replay the walk's cursor
	}

	t.Run("writes reach the lists through the replica", func(t *testing.T) {
		seedNow, _ := time.Parse(time.RFC3339, replicaSeedNow)
		fresh := cdnapi.File{ID: "fil_writtenafterseed", Project: "default", CreatedAt: seedNow.Add(time.Hour),
			Filename: "late.pdf", Bytes: 1234, Checksum: "sha256:" + strings.Repeat("ab", 32)}
		if err := storetest.Writer(writer).PutFiles(ctx, []cdnapi.File{fresh}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "both processes list the new file first", func() error {
			for _, p := range procs {
				if ids, _ := filesPage(t, v, p.api, 1, ""); !slices.Equal(ids, []string{fresh.ID}) {
					return fmt.Errorf("process %s: page 1 = %q", p.name, ids)
				}
			}
			return nil
		})
		for _, p := range procs {
			// A cursor is a keyset position, not a row number: the row
			// added before it leaves the page after it unchanged.
			if ids, _ := filesPage(t, v, p.api, replicaWalkLimit, page2Cursor); !slices.Equal(ids, page2) {
				t.Errorf("process %s: the page-2 cursor now gives %q, want %q as before the write", p.name, ids, page2)
			}
		}
	})

	// Reads survive either server: every list answers at once, the first
	// request after a server stops included.
	allLists := func(t *testing.T, when string) {
		t.Helper()
		for _, p := range procs {
			for _, u := range p.lists() {
				if err := wantStatus(t, v, u, http.StatusOK); err != nil {
					t.Errorf("%s: process %s: %v", when, p.name, err)
				}
			}
		}
	}
	// serving: Storage reads storage and every process is ready. With the
	// replica down, Storage is degraded_performance (reads stand on the
	// primary alone), and the processes stay in service.
	serving := func(storage cdnapi.Status) error {
		var errs []error
		for _, p := range procs {
			errs = append(errs, wantStorage(t, v, p.api, storage),
				wantProbe(p.admin+"/readyz", http.StatusOK))
		}
		return errors.Join(errs...)
	}

	if err := replica.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Run("replica down: reads from the primary", func(t *testing.T) {
		allLists(t, "right after the replica stopped")
		fresh := cdnapi.File{ID: "fil_writtenreplicadown", Project: "default", CreatedAt: time.Now().Add(2 * time.Hour).UTC(),
			Filename: "down.pdf", Bytes: 1, Checksum: "sha256:" + strings.Repeat("cd", 32)}
		if err := storetest.Writer(writer).PutFiles(ctx, []cdnapi.File{fresh}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "both processes list the file written with the replica down, Storage degraded_performance, /readyz 200", func() error {
			for _, p := range procs {
				if ids, _ := filesPage(t, v, p.api, 1, ""); !slices.Equal(ids, []string{fresh.ID}) {
					return fmt.Errorf("process %s: page 1 = %q", p.name, ids)
				}
			}
			return serving(cdnapi.StatusDegradedPerformance)
		})
	})

	if err := replica.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := replica.WaitReplay(ctx); err != nil {
		t.Fatal(err)
	}
	if err := primary.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Run("primary down: reads from the replica", func(t *testing.T) {
		allLists(t, "right after the primary stopped")
		eventually(t, "Storage operational, /readyz 200", func() error { return serving(cdnapi.StatusOperational) })
	})

	if err := replica.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Run("both down", func(t *testing.T) {
		eventually(t, "every list 503, Storage major_outage, /readyz 503", func() error {
			var errs []error
			for _, p := range procs {
				for _, u := range p.lists() {
					errs = append(errs, wantError(t, v, u, http.StatusServiceUnavailable, cdnapi.CodeStorageUnavailable))
				}
				errs = append(errs, wantStorage(t, v, p.api, cdnapi.StatusMajorOutage),
					wantProbe(p.admin+"/readyz", http.StatusServiceUnavailable))
			}
			return errors.Join(errs...)
		})
		for _, p := range procs {
			if err := wantProbe(p.admin+"/healthz", http.StatusOK); err != nil {
				t.Errorf("process %s is alive, but %v", p.name, err)
			}
		}
	})

	if err := primary.Restart(); err != nil {
		t.Fatal(err)
	}
	t.Run("primary back alone", func(t *testing.T) {
		eventually(t, "every list 200, Storage degraded_performance (the replica is still down), /readyz 200", func() error {
			var errs []error
			for _, p := range procs {
				for _, u := range p.lists() {
					errs = append(errs, wantStatus(t, v, u, http.StatusOK))
				}
			}
			return errors.Join(append(errs, serving(cdnapi.StatusDegradedPerformance))...)
		})
	})

	for _, p := range procs {
		if err := p.terminate(); err != nil {
			t.Errorf("process %s after SIGTERM: %v", p.name, err)
		}
	}
}

// child is `cdnapi serve` running as a child process: this test binary,
// which TestMain turns into cdnapi.
type child struct {
	name             string
	cmd              *exec.Cmd
	api, edge, admin string     // base URLs
	done             chan error // the result of cmd.Wait, once stderr is drained
	logs             lineTail
}

// startChildren starts n `cdnapi serve` processes at once, with args after
// the listener flags, and waits for each to log its three addresses. They
// are killed when t ends, if still running, and their last log lines are
// shown if t failed.
func startChildren(t testing.TB, n int, args ...string) []*child {
	t.Helper()
	args = append([]string{"--", "serve", "--api-addr", "127.0.0.1:0", "--edge-addr", "127.0.0.1:0",
		"--admin-addr", "127.0.0.1:0", "--status-interval", "200ms"}, args...)
	children := make([]*child, n)
	ready := make(chan error, n)
	for i := range children {
		c := &child{name: string(rune('A' + i)), done: make(chan error, 1)}
		children[i] = c
		c.cmd = exec.Command(os.Args[0], args...)
		c.cmd.Env = append(os.Environ(), "CDNAPI_TEST_AS_MAIN=1")
		stderr, err := c.cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			select {
			case <-c.done:
			default:
				c.cmd.Process.Kill()
				<-c.done
			}
			if t.Failed() {
				t.Logf("the last log lines of process %s:\n%s", c.name, c.logs.String())
			}
		})
		go c.readLogs(stderr, ready)
	}
	timeout := time.After(time.Minute) // two concurrent migrations, on a loaded machine
	for range children {
		select {
		case err := <-ready:
			if err != nil {
				t.Fatal(err)
			}
		case <-timeout:
			t.Fatal("cdnapi serve did not start within a minute")
		}
	}
	return children
}

// readLogs reads the process's log until it ends, reporting on ready once
// the three listeners are up (or the process ended before), and then
// collects the process's exit.
func (c *child) readLogs(stderr io.Reader, ready chan<- error) {
	addrs := map[string]string{}
	scanner := bufio.NewScanner(stderr)
	scanner.Buffer(nil, 1<<20)
	for scanner.Scan() {
		c.logs.add(scanner.Text())
		var line struct{ Msg, Listener, Addr string }
		if len(addrs) < 3 && json.Unmarshal(scanner.Bytes(), &line) == nil && line.Msg == "listening" {
			addrs["http://"+line.Listener] = "http://" + line.Addr
			if len(addrs) == 3 {
				c.api, c.edge, c.admin = addrs["http://api"], addrs["http://edge"], addrs["http://admin"]
				ready <- nil
			}
		}
	}
	io.Copy(io.Discard, stderr) // a line too long for the scanner must not block the process
	err := c.cmd.Wait()
	if len(addrs) < 3 {
		ready <- fmt.Errorf("cdnapi serve (process %s) ended before it listened: %v\n%s", c.name, err, c.logs.String())
	}
	c.done <- err
}

// lists returns the URLs of the list endpoints, which read from the replica
// while it answers.
func (c *child) lists() []string {
	return []string{c.api + "/api/v1/files?limit=5", c.edge + "/api/v1/assets?limit=5", c.edge + "/api/v1/regions"}
}

// terminate sends SIGTERM and returns the process's exit, or an error if
// it does not end within the drain time.
func (c *child) terminate() error {
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case err := <-c.done:
		c.done <- err // for the cleanup
		return err
	case <-time.After(30 * time.Second):
		return errors.New("still running 30s after SIGTERM")
	}
}

// lineTail keeps the last lines of a log, for the report of a failure.
type lineTail struct {
	mu    sync.Mutex
	lines []string
}

func (l *lineTail) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) == 40 {
		l.lines = slices.Delete(l.lines, 0, 1)
	}
	l.lines = append(l.lines, line)
}

func (l *lineTail) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// replicaClient bounds every request of TestReplica; the server's own store
// timeout (2s) should answer long before.
var replicaClient = &http.Client{Timeout: 10 * time.Second}

// fetch GETs u and validates the answer against the OpenAPI document. Only
// a failure to get an answer at all is returned as an error.
func fetch(t *testing.T, v *apitest.Validator, u string) (*http.Response, []byte, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := replicaClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, nil, err
	}
	v.Check(t, req, res, body)
	return res, body, nil
}

// filesPage fetches one page of files and returns its IDs and next cursor,
// failing t unless it is a 200.
func filesPage(t *testing.T, v *apitest.Validator, api string, limit int, cursor string) (ids []string, next string) {
	t.Helper()
	q := url.Values{"limit": {fmt.Sprint(limit)}}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	u := api + "/api/v1/files?" + q.Encode()
	res, body, err := fetch(t, v, u)
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Data       []struct{ ID string }
		HasMore    bool    `json:"has_more"`
		NextCursor *string `json:"next_cursor"`
	}
	if res.StatusCode != http.StatusOK || json.Unmarshal(body, &p) != nil {
		t.Fatalf("GET %s = %d %s", u, res.StatusCode, body)
	}
	for _, f := range p.Data {
		ids = append(ids, f.ID)
	}
	if p.HasMore != (p.NextCursor != nil) {
		t.Fatalf("GET %s: has_more %v with next_cursor %v", u, p.HasMore, p.NextCursor)
	}
	if p.NextCursor != nil {
		next = *p.NextCursor
	}
	return ids, next
}

func fileIDs(files []cdnapi.File) []string {
	ids := make([]string, len(files))
	for i, f := range files {
		ids[i] = f.ID
	}
	return ids
}

// wantError returns nil if u answers status with the error code and, for a
// 503, a Retry-After.
func wantError(t *testing.T, v *apitest.Validator, u string, status int, code string) error {
	res, body, err := fetch(t, v, u)
	if err != nil {
		return err
	}
	var e struct{ Error struct{ Code string } }
	json.Unmarshal(body, &e)
	switch {
	case res.StatusCode != status || e.Error.Code != code:
		return fmt.Errorf("%s = %d %s", u, res.StatusCode, short(body))
	case status == http.StatusServiceUnavailable && res.Header.Get("Retry-After") == "":
		return fmt.Errorf("%s = 503 without Retry-After", u)
	}
	return nil
}

// wantStatus returns nil if u answers status.
func wantStatus(t *testing.T, v *apitest.Validator, u string, status int) error {
	res, body, err := fetch(t, v, u)
	if err == nil && res.StatusCode != status {
		err = fmt.Errorf("%s = %d %s", u, res.StatusCode, short(body))
	}
	return err
}

// wantStorage returns nil if the status document of api answers 200 and
// shows Storage, and the overall status, as want.
func wantStorage(t *testing.T, v *apitest.Validator, api string, want cdnapi.Status) error {
	res, body, err := fetch(t, v, api+"/api/v1/status")
	if err != nil {
		return err
	}
	var doc struct {
		Status     cdnapi.Status
		Components []struct {
			Name   string
			Status cdnapi.Status
		}
	}
	if res.StatusCode != http.StatusOK || json.Unmarshal(body, &doc) != nil {
		return fmt.Errorf("%s/api/v1/status = %d %s", api, res.StatusCode, short(body))
	}
	for _, c := range doc.Components {
		if c.Name == cdnapi.ComponentStorage && c.Status == want && doc.Status == overallOf(want) {
			return nil
		}
	}
	return fmt.Errorf("%s/api/v1/status shows %s", api, body)
}

// short cuts a body down for an error message.
func short(body []byte) string {
	if len(body) > 200 {
		return string(body[:200]) + "…"
	}
	return string(body)
}

// wantProbe returns nil if the admin probe u answers status.
func wantProbe(u string, status int) error {
	res, err := replicaClient.Get(u)
	if err != nil {
		return err
	}
	res.Body.Close()
	if res.StatusCode != status {
		return fmt.Errorf("%s = %d", u, res.StatusCode)
	}
	return nil
}

// eventually calls check until it returns nil, and fails t with its last
// error if that takes longer than replicaPoll.
func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(replicaPoll)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s: not within %v: %v", what, replicaPoll, err)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}
