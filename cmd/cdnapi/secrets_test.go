package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSecretsStayPrivate runs cdnapi as a process with a cursor secret on its
// command line and another in its environment, and reads every address: no
// answer, /debug/pprof/cmdline included, shows either.
func TestSecretsStayPrivate(t *testing.T) {
	const flagSecret, envSecret = "flag-secret-7Yq2pLm9Xv", "env-secret-Zr4Kw8Tn3B"
	db := "sqlite:" + filepath.Join(t.TempDir(), "secrets.db")
	cmd := exec.Command(os.Args[0], "--", "serve", "--db", db, "--demo", "--api-addr", "127.0.0.1:0",
		"--edge-addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0", "--cursor-secret", flagSecret)
	cmd.Env = append(os.Environ(), "CDNAPI_TEST_AS_MAIN=1", "CDNAPI_UPLOAD_HEALTH_URL=http://u:"+envSecret+"@127.0.0.1:1/")
	logs, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	addrs := map[string]string{}
	var logText strings.Builder
	scanner := bufio.NewScanner(logs)
	for len(addrs) < 3 && scanner.Scan() {
		logText.Write(scanner.Bytes())
		var line struct{ Msg, Listener, Addr string }
		if json.Unmarshal(scanner.Bytes(), &line) == nil && line.Msg == "listening" {
			addrs[line.Listener] = "http://" + line.Addr
		}
	}
	if len(addrs) < 3 {
		t.Fatalf("cdnapi did not start: %s", logText.String())
	}
	go io.Copy(io.Discard, logs)

	client := &http.Client{Timeout: 30 * time.Second}
	paths := map[string][]string{
		"api":   {"/", "/docs", "/status", "/api/v1/files", "/api/v1/status", "/api/v1/openapi.json", "/nope"},
		"edge":  {"/api/v1/regions", "/api/v1/assets", "/api/v1/openapi.json", "/nope"},
		"admin": {"/healthz", "/readyz", "/metrics", "/debug/pprof/", "/debug/pprof/cmdline", "/debug/pprof/goroutine?debug=2", "/debug/pprof/symbol", "/nope"},
	}
	for listener, ps := range paths {
		for _, p := range ps {
			req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, addrs[listener]+p, nil)
			if err != nil {
				t.Fatal(err)
			}
			res, err := client.Do(req)
			if err != nil {
				t.Fatalf("%s%s: %v", listener, p, err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			for _, secret := range []string{flagSecret, envSecret} {
				if strings.Contains(string(body), secret) || strings.Contains(headerText(res.Header), secret) {
					t.Errorf("%s %s (status %d) shows a secret", listener, p, res.StatusCode)
				}
			}
		}
	}
}

func headerText(h http.Header) string {
	var b strings.Builder
	h.Write(&b)
	return b.String()
}

// TestDSNPasswordsRedacted checks that the errors of a PostgreSQL DSN that
// cannot be parsed or reached never show its password.
func TestDSNPasswordsRedacted(t *testing.T) {
	const password = "pw-Hk3Jd9Qs2"
	for _, dsn := range []string{
		"postgres://cdnapi:" + password + "@127.0.0.1:1/cdnapi?connect_timeout=2",
		"postgres://cdnapi:" + password + "@127.0.0.1:notaport/cdnapi",
		"postgresql://cdnapi:" + password + "@[::1/cdnapi",
		"postgres://cdnapi@127.0.0.1:1/cdnapi?connect_timeout=2&password=" + password,
		"postgres://cdnapi@127.0.0.1:notaport/cdnapi?password=" + password,
		"postgres://cdnapi:" + password + "@127.0.0.1:1/cdnapi?connect_timeout=2&sslmode=bogus",
	} {
		for _, args := range [][]string{{"migrate", "--db", dsn}, {"serve", "--db", dsn, "--api-addr", "127.0.0.1:0",
			"--edge-addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0"}} {
			var stderr strings.Builder
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			err := run(ctx, args, getenvFrom(nil), strings.NewReader(""), io.Discard, &stderr)
			cancel()
			if err == nil {
				t.Fatalf("%s with %q succeeded", args[0], dsn)
			}
			if strings.Contains(err.Error(), password) || strings.Contains(stderr.String(), password) {
				t.Errorf("%s with %q shows the password: %v\n%s", args[0], dsn, err, stderr.String())
			}
		}
	}
}

func TestRedactDSN(t *testing.T) {
	for _, tc := range []struct{ dsn, want string }{
		{"sqlite:cdnapi.db", "sqlite:cdnapi.db"},
		{"postgres://cdnapi@db/cdnapi", "postgres://cdnapi@db/cdnapi"},
		{"postgres://cdnapi:pw@db:5432/cdnapi", "postgres://cdnapi:xxxxx@db:5432/cdnapi"},
		{"postgresql://cdnapi@db/cdnapi?password=pw&sslmode=require", "postgresql://cdnapi@db/cdnapi?password=xxxxx&sslmode=require"},
		{"postgres://db/cdnapi?sslpassword=pw", "postgres://db/cdnapi?sslpassword=xxxxx"},
		{"postgres://cdnapi:pw@[::1/cdnapi", "postgres://…"},
	} {
		if got := redactDSN(tc.dsn); got != tc.want {
			t.Errorf("redactDSN(%q) = %q, want %q", tc.dsn, got, tc.want)
		}
	}
}
