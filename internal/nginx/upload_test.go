package nginx_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cdnapi/cdnapi/internal/nginx"
	"github.com/cdnapi/cdnapi/internal/nginxtest"
)

// authorizer stands in for cdnapi's upload-auth listener, answering the
// contract of nginx.Upload: a key of keys is authorized for its project;
// "readonly" is a key without upload scope (403), "malformed" draws a 400,
// and any other key, or none, a 401.
type authorizer struct {
	keys map[string]string // API key → project

	mu   sync.Mutex
	seen []http.Header // the headers of each request, in order
}

func (a *authorizer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	a.seen = append(a.seen, r.Header.Clone())
	a.mu.Unlock()
	if r.Method != http.MethodGet || r.URL.Path != "/authorize" {
		http.Error(w, "not the contract", http.StatusTeapot)
		return
	}
	fail := func(status int, typ, code, message string) {
		body, _ := json.Marshal(map[string]any{"error": map[string]string{
			"type": typ, "code": code, "message": message, "request_id": r.Header.Get("X-Request-Id"),
		}})
		w.Header().Set("X-Cdnapi-Status", fmt.Sprint(status))
		w.Header().Set("X-Cdnapi-Error", string(body))
		if status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="cdnapi"`)
		}
		w.WriteHeader(status)
	}
	key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	switch {
	case !ok:
		fail(http.StatusUnauthorized, "authentication_error", "authentication_required", "send an API key")
	case key == "readonly":
		fail(http.StatusForbidden, "invalid_request_error", "scope_missing", "this key has no upload scope")
	case key == "malformed":
		fail(http.StatusBadRequest, "invalid_request_error", "path_invalid", "the authorizer refuses this path")
	case a.keys[key] != "":
		w.Header().Set("X-Cdnapi-Project", a.keys[key])
		w.WriteHeader(http.StatusNoContent)
	default:
		fail(http.StatusUnauthorized, "authentication_error", "api_key_invalid", "the API key is not valid")
	}
}

// requests returns the headers of the requests the authorizer had.
func (a *authorizer) requests() []http.Header {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]http.Header(nil), a.seen...)
}

// uploadFixture is an upload server in front of an authorizer, over a new
// uploads root.
type uploadFixture struct {
	root   string
	auth   *authorizer
	authTS *httptest.Server
	server *nginx.Server
}

// startUpload starts an authorizer with keys "key-a" (project alpha) and
// "key-b" (project beta) and more, and an upload server in front of it.
func startUpload(t *testing.T, maxBytes int64) *uploadFixture {
	t.Helper()
	nginxtest.Require(t)
	a := &authorizer{keys: map[string]string{
		"key-a":    "alpha",
		"key-b":    "beta",
		"key-dots": "..",
		"key-path": "alpha/../beta",
		"key-nul":  "a b",
	}}
	ts := httptest.NewServer(a)
	t.Cleanup(ts.Close)
	root := t.TempDir()
	s := nginxtest.StartUpload(t, nginx.Upload{Root: root, Auth: ts.Listener.Addr().String(), MaxBytes: maxBytes})
	return &uploadFixture{root: root, auth: a, authTS: ts, server: s}
}

// do sends method to the raw path (sent as it is, not cleaned) with key (none
// if "") and body, and returns the answer with its body read.
func (f *uploadFixture) do(t *testing.T, method, rawPath, key string, body []byte) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, f.server.URL()+"/", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.URL.Opaque = rawPath // sent as it is
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, rawPath, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, rawPath, err)
	}
	return res, b
}

// files returns every regular file under dir, relative to it.
func filesUnder(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// errorBody checks that res is the JSON error of API.md with code, and the
// request ID of its X-Request-Id header.
func errorBody(t *testing.T, what string, res *http.Response, body []byte, status int, code string) {
	t.Helper()
	if res.StatusCode != status {
		t.Errorf("%s: status %d, want %d: %s", what, res.StatusCode, status, body)
	}
	if ct := res.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s: Content-Type %q", what, ct)
	}
	var e struct {
		Error struct {
			Type, Code, Message string
			RequestID           string `json:"request_id"`
		}
	}
	if err := json.Unmarshal(body, &e); err != nil {
		t.Errorf("%s: body not JSON: %v: %q", what, err, body)
		return
	}
	if e.Error.Code != code || e.Error.Type == "" || e.Error.Message == "" {
		t.Errorf("%s: error %+v, want code %s", what, e.Error, code)
	}
	id := res.Header.Get("X-Request-Id")
	if !strings.HasPrefix(id, "req_") || len(id) != 36 || e.Error.RequestID != id {
		t.Errorf("%s: X-Request-Id %q, body's request_id %q", what, id, e.Error.RequestID)
	}
}
