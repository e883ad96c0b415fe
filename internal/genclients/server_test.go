package genclients

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// server is a real `cdnapi serve`, built from this checkout and run as a
// process on loopback ports, with authentication and rate limits on, so that
// every answer of the contract can be had.
type server struct {
	api, edge string // base URLs
	key       string // an API key of the default project
	spare     string // another key, whose bucket the rate-limit test empties
	upload    string // a key of the default project whose scope (upload) may not list
}

var buildOnce = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "genclients-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "cdnapi")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/cdnapi")
	cmd.Dir = "../.."
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", &buildError{out}
	}
	return bin, nil
})

type buildError struct{ out []byte }

func (e *buildError) Error() string { return "go build ./cmd/cdnapi: " + string(e.out) }

// startServer seeds a new SQLite database, creates two keys and serves it
// until the test ends.
func startServer(t *testing.T) *server {
	t.Helper()
	bin, err := buildOnce()
	if err != nil {
		t.Fatal(err)
	}
	db := "sqlite:" + filepath.Join(t.TempDir(), "cdnapi.db")
	run := func(args ...string) string {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, bin, args...).Output()
		if err != nil {
			t.Fatalf("cdnapi %s: %v", strings.Join(args, " "), err)
		}
		return strings.TrimSpace(string(out))
	}
	run("seed", "--db", db, "--files", "45", "--assets", "45", "--seed", "1")
	s := &server{
		key:    run("keys", "create", "--db", db, "--project", "default"),
		spare:  run("keys", "create", "--db", db, "--project", "default", "--name", "spare"),
		upload: run("keys", "create", "--db", db, "--project", "default", "--scope", "upload", "--name", "upload"),
	}

	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "serve", "--db", db,
		"--api-addr", "127.0.0.1:0", "--edge-addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0",
		"--auth", "required", "--rate-limit", "50", "--rate-burst", "100", "--log-format", "json")
	cmd.WaitDelay = 10 * time.Second
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		cmd.Wait()
	})
	addrs := map[string]string{}
	lines := bufio.NewScanner(stderr)
	deadline := time.AfterFunc(30*time.Second, cancel)
	for len(addrs) < 3 && lines.Scan() {
		var line struct{ Msg, Listener, Addr string }
		if json.Unmarshal(lines.Bytes(), &line) == nil && line.Msg == "listening" {
			addrs[line.Listener] = "http://" + line.Addr
		}
	}
	deadline.Stop()
	if len(addrs) < 3 {
		t.Fatalf("serve did not come up: %v", lines.Err())
	}
	go func() { // keep the log flowing
		for lines.Scan() {
		}
	}()
	s.api, s.edge = addrs["api"], addrs["edge"]
	return s
}
