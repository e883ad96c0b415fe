package main

// The tests of issue 34, part 2: each message a new user meets is one line
// that says what to do, with its exit status. Each runs the command as a
// user types it, in-process, against real SQLite files, a real PostgreSQL
// server and real HTTP over loopback.

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi/internal/pgtest"
)

// wantLine fails t unless err is the one line want and exits with status.
func wantLine(t *testing.T, err error, want string, status int) {
	t.Helper()
	if err == nil {
		t.Fatalf("err = nil, want %q", want)
	}
	if got := err.Error(); got != want {
		t.Errorf("error line\n got %q\nwant %q", got, want)
	}
	if got := exitStatus(err); got != status {
		t.Errorf("exit status %d, want %d (err %q)", got, status, err)
	}
}

// A server that cannot be reached, or that refuses us, is one line with the
// cause alone, and serve does not call itself migrate.
func TestPostgresConnectErrorsInOneLine(t *testing.T) {
	t.Parallel()
	refused := "postgres://cdnapi:secret@127.0.0.1:1/cdnapi"
	for _, args := range [][]string{
		{"migrate", "--db", refused},
		{"status", "list", "--db", refused},
		{"serve", "--db", refused, "--api-addr", "127.0.0.1:0", "--edge-addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0"},
	} {
		_, _, err := runCmd(t, "", args...)
		wantLine(t, err, "cannot connect to PostgreSQL at 127.0.0.1:1: connection refused", 1)
	}

	u, err := url.Parse(pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User("nobody") // trust authentication: the role is what fails
	_, _, err = runCmd(t, "", "migrate", "--db", u.String())
	wantLine(t, err, `cannot connect to PostgreSQL at `+u.Host+`: role "nobody" does not exist`, 1)
}

// A mistyped command names the nearest one, as a mistyped flag does.
func TestUnknownCommandSuggests(t *testing.T) {
	t.Parallel()
	for typed, want := range map[string]string{
		"serv":   `unknown command "serv"; did you mean serve? (see cdnapi --help)`,
		"ingets": `unknown command "ingets"; did you mean ingest? (see cdnapi --help)`,
		"key":    `unknown command "key"; did you mean keys? (see cdnapi --help)`,
		"xyz":    `unknown command "xyz" (see cdnapi --help)`,
	} {
		_, _, err := runCmd(t, "", typed)
		wantLine(t, err, want, 2)
	}
}

// cancelAfter is an input that cancels its context, as a Ctrl-C does, once
// its first part has been read, and then goes on giving the rest.
type cancelAfter struct {
	first, rest io.Reader
	cancel      func()
}

func (r *cancelAfter) Read(p []byte) (int, error) {
	if n, err := r.first.Read(p); n > 0 || err != io.EOF {
		return n, err
	}
	r.cancel()
	return r.rest.Read(p)
}

// Ctrl-C during an ingest says that nothing was written and to run the
// same command again, not "context canceled", and nothing was written.
func TestIngestInterrupted(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "cdnapi.db")
	mustRunCmd(t, "", "migrate", "--db", db)
	regions := demoRegionsNDJSON(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	in := &cancelAfter{first: strings.NewReader(regions), rest: strings.NewReader(strings.Repeat(regions, 200)), cancel: cancel}
	var stderr bytes.Buffer
	err := run(ctx, []string{"ingest", "regions", "--db", db}, getenvFrom(nil), in, io.Discard, &stderr)
	wantLine(t, err, "interrupted: nothing was written; run the same command again", 130)
	if out, _ := mustRunCmd(t, "", "regions", "list", "--db", db); strings.Contains(out, "FRA1") {
		t.Errorf("an interrupted ingest wrote regions:\n%s", out)
	}
}

// A directory where a file goes is refused before any work, in one line
// that says what goes there, and nothing is written.
func TestDirectoryWhereAFileGoes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "cdnapi.db")
	mustRunCmd(t, "", "migrate", "--db", db)
	dbWant := "--db " + dir + ": " + dir + " is a directory; give the path of a database file, such as " + db
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"migrate", "--db", dir}, dbWant},
		{[]string{"serve", "--db", dir}, dbWant},
		{[]string{"status", "list", "--db", dir}, dbWant},
		{[]string{"ingest", "regions", "--db", dir}, dbWant},
		{[]string{"follow", "--db", dir, filepath.Join(dir, "edge.log")}, dbWant},
		{[]string{"ingest", "regions", "--db", db, dir}, "ingest: " + dir + " is a directory; give the path of an NDJSON file, or - for standard input"},
		{[]string{"follow", "--db", db, dir}, "follow: " + dir + " is a directory; give the path of the access log nginx writes"},
	} {
		_, stderr, err := runCmd(t, demoRegionsNDJSON(t), c.args...)
		wantLine(t, err, c.want, 2)
		if stderr != "" {
			t.Errorf("%v wrote %q before refusing", c.args, stderr)
		}
	}
	if out, _ := mustRunCmd(t, "", "regions", "list", "--db", db); strings.Contains(out, "FRA1") {
		t.Errorf("a refused ingest wrote regions:\n%s", out)
	}
}

// follow --once on a log that is not there fails at once, in one line
// (without --once, follow waits and warns again now and then: see
// internal/follow's TestMissingLogWarnedAgain).
func TestFollowOnceMissingLog(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "cdnapi.db")
	mustRunCmd(t, "", "migrate", "--db", db)
	log := filepath.Join(dir, "nosuch.log")
	_, _, err := runCmd(t, "", "follow", "--once", "--db", db, log)
	wantLine(t, err, "follow: no log at "+log+"; --once reads a log that is there (without --once, follow waits for it)", 2)
}

// A missing --project says that it is required, not that its format is
// wrong.
func TestProjectRequired(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "cdnapi.db")
	mustRunCmd(t, "", "migrate", "--db", db)
	_, _, err := runCmd(t, "", "keys", "create", "--db", db)
	wantLine(t, err, "keys create: --project is required: the project whose files the key reads (e.g. --project default)", 2)
	_, _, err = runCmd(t, "", "origin", "sync", dir, "--db", db)
	wantLine(t, err, "origin: --project is required: the project whose files DIR holds (e.g. --project default)", 2)
}

// Bare regions lists, as bare status does and as the README's
// regions [list | …] says.
func TestBareRegionsLists(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "cdnapi.db")
	mustRunCmd(t, "", "seed", "--db", db)
	bare, _ := mustRunCmd(t, "", "regions", "--db", db)
	list, _ := mustRunCmd(t, "", "regions", "list", "--db", db)
	if bare != list || !strings.Contains(bare, "FRA1") {
		t.Errorf("bare regions printed\n%s\nwant what regions list prints:\n%s", bare, list)
	}
}

// Each --help names, as its CDNAPI_<FLAG> example, a flag the command has;
// keys create, webhooks add and origin sync print their own help.
func TestHelpNamesItsOwnFlags(t *testing.T) {
	t.Parallel()
	example := regexp.MustCompile(`e\.g\. --([a-z-]+) as (CDNAPI_[A-Z_]+);`)
	for _, args := range [][]string{
		{"serve"}, {"seed"}, {"migrate"}, {"ingest"}, {"follow"}, {"origin", "sync"}, {"uploads"}, {"prune"},
		{"backup"}, {"regions"}, {"status"}, {"keys"}, {"keys", "create"}, {"webhooks", "add"}, {"get"},
	} {
		out, _, err := runCmd(t, "", append(args, "--help")...)
		if exitStatus(err) != 0 {
			t.Errorf("%v --help: %v", args, err)
		}
		m := example.FindStringSubmatch(out)
		if m == nil {
			t.Errorf("%v --help names no CDNAPI_<FLAG> example:\n%s", args, out)
			continue
		}
		if !strings.Contains(out, "\n  -"+m[1]+" ") && !strings.Contains(out, "\n  -"+m[1]+"\n") || m[2] != envName(m[1]) {
			t.Errorf("%v --help: its example --%s as %s is not a flag of the command:\n%s", args, m[1], m[2], out)
		}
	}
	for args, want := range map[string]string{
		"keys create":  "Usage: cdnapi keys create --project NAME",
		"webhooks add": "Usage: cdnapi webhooks add URL [--events TYPE,…] [--secret-file F]  [--db DSN]\n",
		"origin sync":  "Usage: cdnapi origin sync DIR --project P",
	} {
		out, _, _ := runCmd(t, "", append(strings.Fields(args), "--help")...)
		if !strings.HasPrefix(out, want) || strings.Contains(out, " | list") {
			t.Errorf("%s --help printed\n%s\nwant its own help, starting %q", args, out, want)
		}
	}
}

// get --all walks the largest pages the API serves, and says on stderr
// when it waits on a 429, before it waits.
func TestGetAllPagesAndWaits(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var limits []string
	answered429 := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		limits = append(limits, r.URL.Query().Get("limit"))
		w.Header().Set("Content-Type", "application/json")
		if !answered429 {
			answered429 = true
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"error":{"type":"rate_limit_error","code":"rate_limited","message":"too many requests","request_id":"req_1"}}`)
			return
		}
		io.WriteString(w, `{"object":"list","data":[],"has_more":false,"next_cursor":null}`)
	}))
	defer srv.Close()
	var stderr bytes.Buffer
	err := run(t.Context(), []string{"get", "files", "--all", "--api", srv.URL, "-o", "ndjson"}, getenvFrom(nil),
		strings.NewReader(""), io.Discard, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if want := "get files: the server answered 429 rate_limited; waiting 1s (as it asked) before retry 1 of 4\n"; stderr.String() != want {
		t.Errorf("stderr\n got %q\nwant %q", stderr.String(), want)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(limits) != 2 || limits[0] != "100" || limits[1] != "100" {
		t.Errorf("get --all asked for limit=%v, want 100 twice (the 429, then the page)", limits)
	}
}

// get's 401 names --key and CDNAPI_KEY, not the HTTP header.
func TestGet401NamesKeyFlag(t *testing.T) {
	t.Parallel()
	s := startServe(t, nil, "--db", filepath.Join(t.TempDir(), "cdnapi.db"), "--demo", "--auth", "required")
	request := regexp.MustCompile(`, request req_[A-Za-z0-9_-]+\)$`)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"files"}, "get files: the API needs a key: give it with --key KEY or CDNAPI_KEY (cdnapi keys create makes one) (401 authentication_required"},
		{[]string{"files", "--key", "cdk_nope"}, "get files: the API refused the key of --key or CDNAPI_KEY: it is unknown, revoked or expired (see cdnapi keys list) (401 api_key_invalid"},
	} {
		_, err := getOutput(t, s, c.args...)
		if err == nil {
			t.Fatalf("get %v: no error", c.args)
		}
		if line := err.Error(); !strings.HasPrefix(line, c.want) || !request.MatchString(line) {
			t.Errorf("get %v:\n got %q\nwant %q, then its request ID", c.args, line, c.want+", request req_…)")
		}
		if exitStatus(err) != 1 {
			t.Errorf("get %v: exit status %d, want 1", c.args, exitStatus(err))
		}
	}
}

// The small things: one file is "1 file", sizes are in one unit family
// (KiB, MiB: see TestOriginProgressLine), and keys create's note does not
// point "above" when KEY=$(…) shows nothing there.
func TestSmallThings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "cdnapi.db")
	mustRunCmd(t, "", "migrate", "--db", db)
	files := `{"id":"fil_1","filename":"a.txt","bytes":1,"checksum":"sha256:` + strings.Repeat("0", 64) + `","created_at":"2026-01-01T00:00:00Z"}` + "\n"
	_, stderr := mustRunCmd(t, files, "ingest", "files", "--db", db)
	if !regexp.MustCompile(`(?m)^ingested 1 file in \S+ \(\S+ lines/s\); 0 invalid$`).MatchString(stderr) {
		t.Errorf("ingest of one file printed %q, want ingested 1 file …", stderr)
	}
	out, stderr := mustRunCmd(t, "", "keys", "create", "--project", "default", "--db", db, "--quiet")
	id := regexp.MustCompile(`^created (key_\S+) for`).FindStringSubmatch(stderr)
	if !strings.HasPrefix(out, "cdk_") || id == nil {
		t.Fatalf("keys create printed %q and %q", out, stderr)
	}
	if want := "created " + id[1] + " for project default, scope read; the key, printed on standard output, is shown only once: keep it\n"; stderr != want {
		t.Errorf("keys create's note\n got %q\nwant %q", stderr, want)
	}
}

// A default serve (no upload service, no scanner, no --region) reads
// under_maintenance by plan, and its status page says why: the two
// components are not deployed here, and no "by local".
func TestStatusPageOfDefaultServe(t *testing.T) {
	t.Parallel()
	s := startServe(t, nil, "--db", filepath.Join(t.TempDir(), "cdnapi.db"))
	want := `<p>Under maintenance</p><p class="sub" id="components-at-fault">Upload Service and Virus Scanning are not deployed here.</p>`
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := http.Get(s.api + "/status")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if strings.Contains(string(body), want) {
			if strings.Contains(string(body), " by local") {
				t.Error(`the page says "by local"`)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the status page never showed %q:\n%s", want, body)
		}
		time.Sleep(50 * time.Millisecond) // a poll for the first evaluation, not a window
	}
}

// Every command interrupted says what it left behind and to run it again,
// and exits 130, as shells do for Ctrl-C; TestIngestInterrupted runs one.
func TestInterruptedLines(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"ingest", "assets"}, "interrupted: nothing was written; run the same command again"},
		{[]string{"seed"}, "interrupted: nothing was written; run the same command again"},
		{[]string{"migrate"}, "interrupted: the migrations applied so far are kept; run the same command again to apply the rest"},
		{[]string{"prune", "--older-than", "30d"}, "interrupted: the assets deleted so far stay deleted; run the same command again to delete the rest"},
		{[]string{"origin", "sync", "site"}, "interrupted: the batches committed so far are kept; run the same command again to go on from there"},
		{[]string{"follow", "--once", "edge.log"}, "interrupted: the batches committed so far are kept; run the same command again to go on from there"},
		{[]string{"backup", "copy.db"}, "interrupted: no backup was made; run the same command again"},
		{[]string{"get", "assets", "--all"}, "interrupted; run the same command again"},
	} {
		err := interruptedError{interrupted(c.args[0], c.args[1:])}
		wantLine(t, err, c.want, 130)
	}
}
