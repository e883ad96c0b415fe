package main

// The tests of issue 20: what a new user trips on. Each runs the commands
// as a user types them, in-process, against real SQLite files and a real
// PostgreSQL server.

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi/internal/pgtest"
)

// Only serve, seed and migrate create a database, and say so with its
// absolute path; every other command refuses one that is not there, with
// exit status 2, naming the absolute path and --db, and creates nothing.
func TestOnlyServeSeedMigrateCreate(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir) // a relative --db, as from another directory
	abs := filepath.Join(dir, "cdnapi.db")
	for _, args := range [][]string{
		{"status", "clear", "API"},
		{"status", "list"},
		{"regions", "list"},
		{"keys", "list"},
		{"prune", "--older-than", "1h"},
		{"ingest", "regions"},
		{"backup", "copy.db"},
		{"follow", "list"},
		{"status", "--db", "cdnapi.db"},
		{"status", "--db", "sqlite:cdnapi.db"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			_, _, err := runCmd(t, demoRegionsNDJSON(t), args...)
			if err == nil || !errors.Is(err, errUsage) {
				t.Fatalf("err = %v, want a usage error (exit 2)", err)
			}
			if msg := err.Error(); !strings.Contains(msg, abs) || !strings.Contains(msg, "--db") || strings.Contains(msg, "\n") {
				t.Errorf("error %q: want one line naming %s and --db", msg, abs)
			}
			if _, err := os.Stat(abs); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("%v created %s (stat: %v)", args, abs, err)
			}
		})
	}

	out, _ := mustRunCmd(t, "", "seed", "--db", "seeded.db")
	if want := "created " + filepath.Join(dir, "seeded.db") + "\n"; !strings.HasPrefix(out, want) {
		t.Errorf("seed printed %q, want it to start with %q", out, want)
	}
	out, _ = mustRunCmd(t, "", "migrate")
	if want := "created " + abs + "\n"; !strings.HasPrefix(out, want) {
		t.Errorf("migrate printed %q, want it to start with %q", out, want)
	}
	out, _ = mustRunCmd(t, "", "status", "clear", "API") // the database exists now
	if strings.Contains(out, "created") {
		t.Errorf("status on an existing database printed %q", out)
	}
	if out, _ := mustRunCmd(t, "", "migrate"); strings.Contains(out, "created") {
		t.Errorf("a second migrate printed %q", out)
	}
}

// serve's first log line names the database; a new SQLite file is created
// and logged with its absolute path.
func TestServeNamesItsDatabase(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "new.db")
	var logs syncBuffer
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--db", db, "--api-addr", "127.0.0.1:0", "--edge-addr", "127.0.0.1:0",
			"--admin-addr", "127.0.0.1:0"}, getenvFrom(nil), strings.NewReader(""), io.Discard, &logs)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(logs.String(), `"listening"`) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(logs.String(), "\n")
	if !strings.Contains(first, `"msg":"starting"`) || !strings.Contains(first, `"db":"sqlite `+db+`"`) {
		t.Errorf("first log line %s: want msg starting naming db sqlite %s", first, db)
	}
	if !strings.Contains(logs.String(), `"msg":"created database","path":"`+db+`"`) {
		t.Errorf("serve did not log that it created %s:\n%s", db, logs.String())
	}
}

// syncBuffer is a buffer that serve's goroutines write and the test
// reads at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// describeDB names a database without its password.
func TestDescribeDB(t *testing.T) {
	wd, _ := os.Getwd()
	for _, tt := range []struct{ dsn, want string }{
		{"sqlite:x.db", "sqlite " + filepath.Join(wd, "x.db")},
		{"/var/lib/cdnapi/cdnapi.db", "sqlite /var/lib/cdnapi/cdnapi.db"},
		{"postgres://u:secret@db.example:6432/cdn?sslmode=require", "postgres host=db.example port=6432 dbname=cdn"},
		{"host=10.0.0.1 port=5433 user=u password='s e cret' dbname=cdnapi", "postgres host=10.0.0.1 port=5433 dbname=cdnapi"},
		{"dbname=cdnapi password=secret", "postgres host=(default) port=5432 dbname=cdnapi"},
	} {
		if got := describeDB(tt.dsn); got != tt.want || strings.Contains(got, "secret") || strings.Contains(got, "cret") {
			t.Errorf("describeDB(%q) = %q, want %q", tt.dsn, got, tt.want)
		}
	}
	if got := redactDSN("host=h password='s e cret' sslpassword=x dbname=d"); got != "host=h password=xxxxx sslpassword=xxxxx dbname=d" {
		t.Errorf("redactDSN of keywords = %q", got)
	}
}

// libpq's keyword form reaches PostgreSQL; a bare SQLite path with '=' or
// spaces is refused unless written sqlite:PATH.
func TestKeywordDSN(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	u, err := url.Parse(pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	kw := fmt.Sprintf("host=%s port=%s user=%s dbname=%s", u.Hostname(), u.Port(), u.User.Username(), strings.TrimPrefix(u.Path, "/"))
	if pw, ok := u.User.Password(); ok {
		kw += " password=" + pw
	}
	out, _ := mustRunCmd(t, "", "migrate", "--db", kw)
	if !strings.Contains(out, "postgres host="+u.Hostname()) || !strings.Contains(out, "applied 00001") {
		t.Errorf("migrate --db %q printed %q, want the migrations applied to PostgreSQL", kw, out)
	}
	mustRunCmd(t, demoRegionsNDJSON(t), "ingest", "regions", "--db", kw)
	if out, _ := mustRunCmd(t, "", "regions", "list", "--db", u.String()); !strings.Contains(out, "FRA1") {
		t.Errorf("the regions ingested through the keyword DSN are not in the database:\n%s", out)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a keyword DSN made files: %v", entries)
	}

	for _, dsn := range []string{"my db.db", "a=b.db", "mode=ro.db"} {
		_, _, err := runCmd(t, "", "migrate", "--db", dsn)
		if err == nil || !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "sqlite:PATH") {
			t.Errorf("migrate --db %q: err %v, want a usage error that says sqlite:PATH", dsn, err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("refused DSNs made files: %v", entries)
	}
	out, _ = mustRunCmd(t, "", "migrate", "--db", "sqlite:my db.db")
	if !strings.Contains(out, "created "+filepath.Join(dir, "my db.db")) {
		t.Errorf("migrate --db 'sqlite:my db.db' printed %q", out)
	}
}

// migrate says what it did: each migration applied with its version, name
// and time, or the version the schema is already at.
func TestMigrateReports(t *testing.T) {
	for _, engine := range []struct{ name, dsn string }{
		{"sqlite", "sqlite:" + filepath.Join(t.TempDir(), "m.db")},
		{"postgres", pgtest.NewDatabase(t)},
	} {
		t.Run(engine.name, func(t *testing.T) {
			out, _ := mustRunCmd(t, "", "migrate", "--db", engine.dsn)
			applied := regexp.MustCompile(`(?m)^applied (\d{5}) (\d{5})_\w+\.sql in \d+(\.\d+)?(ms|s|µs|ns)$`).FindAllStringSubmatch(out, -1)
			if len(applied) < 5 || applied[0][1] != "00001" || applied[0][2] != "00001" {
				t.Fatalf("the first migrate printed\n%s\nwant a line per migration applied, from 00001", out)
			}
			last := strings.TrimLeft(applied[len(applied)-1][1], "0")
			if !strings.HasSuffix(out, " is now at version "+last+"\n") {
				t.Errorf("the first migrate printed\n%s\nwant it to end at version %s", out, last)
			}
			out, _ = mustRunCmd(t, "", "migrate", "--db", engine.dsn)
			if strings.Contains(out, "applied") || !strings.HasSuffix(out, " is already at version "+last+"\n") {
				t.Errorf("the second migrate printed %q, want already at version %s", out, last)
			}
		})
	}
}

// ingest says what an input that is not NDJSON looks like, reads gzip as
// it is, and warns of an empty input.
func TestIngestInputs(t *testing.T) {
	db := migratedDB(t, "inputs.db")
	regions := demoRegionsNDJSON(t)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(regions))
	zw.Close()
	gzFile := filepath.Join(t.TempDir(), "regions.ndjson.gz")
	if err := os.WriteFile(gzFile, gz.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}

	for _, tt := range []struct {
		name, stdin string
		want        string // in the error
	}{
		{"csv", "code,name,zone,country,status\nFRA1,Frankfurt,europe-west,DE,operational\n", "line 1 looks like CSV"},
		{"json array", `[{"code":"FRA1"}]`, "jq -c '.[]'"},
		{"zstd", "\x28\xb5\x2f\xfd\x00\x00", "zstd -dc FILE | cdnapi ingest"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := runCmd(t, tt.stdin, "ingest", "regions", "--db", db)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "NDJSON") {
				t.Errorf("err = %v, want one saying %q and what ingest reads", err, tt.want)
			}
		})
	}
	if out, _ := mustRunCmd(t, "", "regions", "list", "--db", db); strings.Contains(out, "FRA1") {
		t.Fatalf("a refused input wrote regions:\n%s", out)
	}

	_, stderr := mustRunCmd(t, "", "ingest", "regions", "--db", db)
	if !strings.Contains(stderr, "warning: standard input was empty") {
		t.Errorf("an empty input said %q, want a warning", stderr)
	}
	_, stderr = mustRunCmd(t, "", "ingest", "regions", "--db", db, gzFile)
	if !strings.Contains(stderr, "ingested 24 regions") {
		t.Errorf("a gzip file: %q, want 24 regions ingested", stderr)
	}
	_, stderr = mustRunCmd(t, gz.String(), "ingest", "regions", "--db", db)
	if !strings.Contains(stderr, "ingested 24 regions") {
		t.Errorf("gzip on stdin: %q, want 24 regions ingested", stderr)
	}
}

// A missing directory is named, and an output path is checked before a
// row is written.
func TestMissingDirectories(t *testing.T) {
	dir := t.TempDir()
	nodir := filepath.Join(dir, "nodir")
	for _, args := range [][]string{
		{"migrate", "--db", filepath.Join(nodir, "x.db")},
		{"seed", "--db", filepath.Join(nodir, "x.db")},
		{"serve", "--db", filepath.Join(nodir, "x.db")},
	} {
		_, _, err := runCmd(t, "", args...)
		if err == nil || !strings.Contains(err.Error(), "the directory "+nodir+" does not exist") {
			t.Errorf("%v: err %v, want it to name the missing directory %s", args, err, nodir)
		}
	}
	db := migratedDB(t, "metrics.db")
	_, _, err := runCmd(t, demoRegionsNDJSON(t), "ingest", "regions", "--db", db, "--metrics-file", filepath.Join(nodir, "ingest.prom"))
	if err == nil || !strings.Contains(err.Error(), "the directory "+nodir+" does not exist") {
		t.Errorf("ingest --metrics-file in a missing directory: err %v, want it named", err)
	}
	if out, _ := mustRunCmd(t, "", "regions", "list", "--db", db); strings.Contains(out, "FRA1") {
		t.Errorf("ingest wrote its rows before it refused --metrics-file:\n%s", out)
	}
}

// The backup examples (once the README's, now in docs/operating.md) run as
// written, under a root of the test's own: into a directory that does not
// exist yet.
func TestBackupREADMEExamples(t *testing.T) {
	root := t.TempDir()
	live := filepath.Join(root, "var/lib/cdnapi")
	if err := os.MkdirAll(live, 0o700); err != nil {
		t.Fatal(err)
	}
	mustRunCmd(t, "", "seed", "--db", "sqlite:"+filepath.Join(live, "cdnapi.db"), "--files", "10")
	doc, err := os.ReadFile("../../docs/operating.md")
	if err != nil {
		t.Fatal(err)
	}
	examples := regexp.MustCompile(`(?m)^cdnapi backup .*$`).FindAllString(string(doc), -1)
	if len(examples) == 0 {
		t.Fatal("docs/operating.md has no cdnapi backup example")
	}
	for i, ex := range examples {
		// The shell runs the line as written (its $(date …) too), with
		// cdnapi this test binary, which TestMain turns into the program.
		ex = strings.ReplaceAll(ex, "/var/", root+"/var/")
		cmd := exec.Command("sh", "-c", `cdnapi() { "$CDNAPI_BIN" -- "$@"; }; `+ex)
		cmd.Env = append(os.Environ(), "CDNAPI_TEST_AS_MAIN=1", "CDNAPI_BIN="+os.Args[0])
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "backed up") {
			t.Errorf("example %d (%s): %v\n%s", i, ex, err, out)
		}
		time.Sleep(time.Second) // a copy a second: the next example names its copy by the time
	}
	copies, _ := filepath.Glob(filepath.Join(root, "var/backups/cdnapi/cdnapi-*.db"))
	if len(copies) == 0 {
		t.Errorf("the backup examples made no copy in /var/backups/cdnapi")
	}
}

// An unknown flag is one line: the nearest flag, and where the usage is;
// the usage itself is not printed.
func TestUnknownFlag(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--port", "9000"}, "serve: unknown flag --port; did you mean --api-addr? (cdnapi serve --help lists the flags)"},
		{[]string{"prune", "--older", "1h"}, "did you mean --older-than?"},
		{[]string{"ingest", "--metric-file", "x"}, "did you mean --metrics-file?"},
		{[]string{"get", "--output", "json"}, "did you mean -o?"},
		{[]string{"keys", "--xyzzy"}, "keys: unknown flag --xyzzy (cdnapi keys --help lists the flags)"},
	} {
		var stdout bytes.Buffer
		err := run(context.Background(), tt.args, getenvFrom(nil), strings.NewReader(""), &stdout, io.Discard)
		if err == nil || !errors.Is(err, errUsage) || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: err %v, want one line with %q", tt.args, err, tt.want)
		}
		if stdout.Len() > 0 {
			t.Errorf("%v printed the usage (%d bytes)", tt.args, stdout.Len())
		}
	}
}

// get against an address where nothing listens says which URL it tried
// and how to set it.
func TestGetServerDown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + l.Addr().String()
	l.Close()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"get", "files", "--api", down}, "--api URL or CDNAPI_API_URL"},
		{[]string{"get", "status", "--api", down}, "--api URL or CDNAPI_API_URL"},
		{[]string{"get", "regions", "--edge", down}, "--edge URL or CDNAPI_EDGE_URL"},
		{[]string{"get", "assets", "--edge", down}, "--edge URL or CDNAPI_EDGE_URL"},
	} {
		_, _, err := runCmd(t, "", tt.args...)
		if err == nil || !strings.Contains(err.Error(), "cannot reach "+down) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: err %v, want it to name %s and %q", tt.args, err, down, tt.want)
		}
	}
}

// Durations take days, and a bad one says which units exist.
func TestDurationsInDays(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want time.Duration
	}{
		{"7d", 7 * 24 * time.Hour},
		{"30d", 30 * 24 * time.Hour},
		{"1d12h", 36 * time.Hour},
		{"1.5d", 36 * time.Hour},
		{"90m", 90 * time.Minute},
		{"-2d", -48 * time.Hour},
		{"0", 0},
	} {
		if got, err := parseDays(tt.in); err != nil || got != tt.want {
			t.Errorf("parseDays(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "d", "7x", "7dd", "1h2d", "7 d", "1e9d"} {
		if _, err := parseDays(bad); err == nil || !strings.Contains(err.Error(), "d, h, m or s") {
			t.Errorf("parseDays(%q): err %v, want one that lists the units", bad, err)
		}
	}

	db := migratedDB(t, "days.db")
	mustRunCmd(t, "", "prune", "--older-than", "30d", "--db", db)
	mustRunCmd(t, "", "keys", "create", "--project", "p", "--expires-in", "90d", "--db", db)
	out, _ := mustRunCmd(t, "", "status", "set", "API", "under_maintenance", "--until", "7d", "--db", db)
	if want := time.Now().Add(7 * 24 * time.Hour).UTC().Format("2006-01-02T15"); !strings.Contains(out, want) {
		t.Errorf("status set --until 7d printed\n%s\nwant an end at %s", out, want)
	}
	_, _, err := runCmd(t, "", "prune", "--older-than", "30x", "--db", db)
	if err == nil || !strings.Contains(err.Error(), "d, h, m or s") {
		t.Errorf("prune --older-than 30x: err %v, want the units named", err)
	}
}

// --all is accepted where there is one page (regions, status), and changes
// nothing; --limit and --cursor are still for the paged lists.
func TestGetAllOnOnePage(t *testing.T) {
	s := startServe(t, nil, "--db", "sqlite:"+filepath.Join(t.TempDir(), "all.db"), "--demo")
	for _, what := range []string{"regions", "status"} {
		one, err := getOutput(t, s, what, "-o", "json")
		if err != nil {
			t.Fatal(err)
		}
		all, err := getOutput(t, s, what, "--all", "-o", "json")
		if err != nil {
			t.Fatalf("get %s --all: %v", what, err)
		}
		if what == "regions" && all != one {
			t.Errorf("get regions --all printed\n%s\nwant what get regions prints:\n%s", all, one)
		}
		if what == "status" && !strings.Contains(all, `"components"`) {
			t.Errorf("get status --all printed %s", all)
		}
		if _, err := getOutput(t, s, what, "--limit", "5"); err == nil || !errors.Is(err, errUsage) {
			t.Errorf("get %s --limit 5: err %v, want a usage error", what, err)
		}
	}
}
