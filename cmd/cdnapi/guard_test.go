package main

import (
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi/internal/apitest"
	"github.com/cdnapi/cdnapi/internal/auth"
	"github.com/cdnapi/cdnapi/internal/pgtest"
)

// TestServeWithKeys runs serve --auth required with a rate limit, keys
// made by the keys command, and checks the revocation bound end to end, on
// each engine: a key revoked by another process is refused within auth's
// refresh interval.
func TestServeWithKeys(t *testing.T) {
	for _, engine := range []struct {
		name string
		dsn  func(t *testing.T) string
	}{
		{"sqlite", func(t *testing.T) string { return migratedDB(t, "keys.db") }},
		{"postgres", func(t *testing.T) string { return pgtest.NewDatabase(t) }},
	} {
		t.Run(engine.name, func(t *testing.T) { serveWithKeys(t, engine.dsn(t)) })
	}
}

func serveWithKeys(t *testing.T, db string) {
	mustRunCmd(t, "", "seed", "--files", "30", "--assets", "10", "--db", db)
	keyA, errOut := mustRunCmd(t, "", "keys", "create", "--project", "default", "--db", db)
	keyA = strings.TrimSpace(keyA)
	idA := regexp.MustCompile(`key_\w+`).FindString(errOut)
	keyB, _ := mustRunCmd(t, "", "keys", "create", "--project", "other", "--db", db)
	keyB = strings.TrimSpace(keyB)
	upload, _ := mustRunCmd(t, "", "keys", "create", "--project", "default", "--scope", "upload", "--db", db)
	upload = strings.TrimSpace(upload)

	s := startServe(t, nil, "--db", db, "--auth", "required", "--rate-limit", "50", "--rate-burst", "100")
	v := apitest.NewValidator(t)
	if res, _ := get(t, v, s.api+"/api/v1/files"); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("files without a key: %d", res.StatusCode)
	}
	res, body := get(t, v, s.api+"/api/v1/files", "Authorization", "Bearer "+keyA)
	if res.StatusCode != 200 || res.Header.Get("Cache-Control") != "private, max-age=60" ||
		res.Header.Get("RateLimit-Policy") != `"default";q=100;w=2` || !strings.Contains(string(body), `"fil_`) {
		t.Fatalf("files with a key: %d %v", res.StatusCode, res.Header)
	}
	if res, body := get(t, v, s.api+"/api/v1/files", "Authorization", "Bearer "+keyB); res.StatusCode != 200 ||
		strings.Contains(string(body), `"fil_`) {
		t.Fatalf("the other project's key: %d %s", res.StatusCode, body)
	}
	// A valid key whose scope is not read lists nothing: 403, in the
	// shape the document gives (the validator checks it), saying which key
	// would do.
	if res, body := get(t, v, s.api+"/api/v1/files", "Authorization", "Bearer "+upload); res.StatusCode != http.StatusForbidden ||
		!strings.Contains(string(body), `"code":"permission_denied"`) ||
		!strings.Contains(string(body), "cdnapi keys create --project default --scope read") {
		t.Fatalf("files with an upload key: %d %s", res.StatusCode, body)
	}
	// The status needs no key, and is limited per address in a bucket of
	// its own (issue 19: it was unlimited).
	if res, _ := get(t, v, s.api+"/api/v1/status"); res.StatusCode != 200 || res.Header.Get("RateLimit") != `"default";r=99;t=1` {
		t.Fatalf("status: %d, RateLimit %q", res.StatusCode, res.Header.Get("RateLimit"))
	}

	mustRunCmd(t, "", "keys", "revoke", idA, "--db", db)
	revoked := time.Now()
	for {
		res, _ := get(t, v, s.edge+"/api/v1/regions", "Authorization", "Bearer "+keyA)
		if res.StatusCode == http.StatusUnauthorized {
			break
		}
		if time.Since(revoked) > auth.DefaultRefreshInterval+time.Second {
			t.Fatalf("the revoked key still answers %d after %v", res.StatusCode, time.Since(revoked))
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("revocation took effect after %v", time.Since(revoked).Round(time.Millisecond))
	if res, _ := get(t, v, s.edge+"/api/v1/regions", "Authorization", "Bearer "+keyB); res.StatusCode != 200 {
		t.Errorf("the other key after the revocation: %d", res.StatusCode)
	}
}

func TestServeGuardFlags(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "flags.db")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--auth", "maybe"}, "--auth must be off or required"},
		{[]string{"--rate-limit", "-1"}, "must not be negative"},
		{[]string{"--rate-burst", "5"}, "--rate-burst needs --rate-limit"},
		{[]string{"--trusted-proxies", "10.0.0.0/8,proxy"}, `"proxy" is neither`},
	} {
		_, _, err := runCmd(t, "", append([]string{"serve", "--db", db, "--api-addr", "127.0.0.1:0",
			"--edge-addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error with %q", tc.args, err, tc.want)
		}
	}
}

// TestRedisURLPasswordRedacted checks that a Redis URL that does not parse,
// or names a Redis that is not there, never shows its password.
func TestRedisURLPasswordRedacted(t *testing.T) {
	const password = "hunter2-Qx7"
	db := "sqlite:" + filepath.Join(t.TempDir(), "redis.db")
	for _, url := range []string{
		"redis://:" + password + "@127.0.0.1:notaport/0",
		"redis://user:" + password + "@[::1/0",
		"redis://127.0.0.1:notaport/0?password=" + password,
		"rediss://:" + password + "@127.0.0.1:1/x",
	} {
		stdout, stderr, err := runCmd(t, "", "serve", "--db", db, "--api-addr", "127.0.0.1:0",
			"--edge-addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0",
			"--rate-limit", "5", "--rate-limit-redis", url)
		if err == nil {
			t.Fatalf("serve with %q started", url)
		}
		if all := err.Error() + stdout + stderr; strings.Contains(all, password) {
			t.Errorf("serve with %q shows the password: %s", url, all)
		} else if !strings.Contains(err.Error(), "--rate-limit-redis") {
			t.Errorf("serve with %q: %v", url, err)
		}
	}
}
