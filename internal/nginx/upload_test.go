package nginx_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

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

// do sends method to rawPath, written into the request line as it is (not
// cleaned, "//" kept), with key (no Authorization if "") and body, and
// returns the answer with its body read.
func (f *uploadFixture) do(t *testing.T, method, rawPath, key string, body []byte) (*http.Response, []byte) {
	t.Helper()
	c, err := net.DialTimeout("tcp", f.server.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	var req bytes.Buffer
	fmt.Fprintf(&req, "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\nCookie: session=1\r\n", method, rawPath, f.server.Addr())
	if key != "" {
		fmt.Fprintf(&req, "Authorization: Bearer %s\r\n", key)
	}
	if body != nil {
		fmt.Fprintf(&req, "Content-Length: %d\r\n", len(body))
	}
	req.WriteString("\r\n")
	req.Write(body)
	if _, err := c.Write(req.Bytes()); err != nil {
		t.Fatalf("%s %s: %v", method, rawPath, err)
	}
	res, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: method})
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

// TestUploadPut: an authorized PUT writes the whole body to
// ROOT/incoming/PROJECT/PATH, dav_access's mode, through the contract's
// subrequest; a second PUT replaces it.
func TestUploadPut(t *testing.T) {
	f := startUpload(t, 0)
	body := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	res, b := f.do(t, http.MethodPut, "/a/b.txt", "key-a", body)
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("PUT: %s: %s", res.Status, b)
	}
	p := filepath.Join(f.root, nginx.UploadIncoming, "alpha", "a", "b.txt")
	got, err := os.ReadFile(p)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("%s: %d bytes, %v; want the %d sent", p, len(got), err, len(body))
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o664 {
		t.Errorf("%s: mode %v, want 0664 (dav_access)", p, fi.Mode().Perm())
	}
	if tmp := filesUnder(t, filepath.Join(f.root, nginx.UploadTmp)); len(tmp) != 0 {
		t.Errorf("tmp holds %v after the PUT", tmp)
	}

	seen := f.auth.requests()
	if len(seen) != 1 {
		t.Fatalf("the authorizer had %d requests, want 1", len(seen))
	}
	for k, want := range map[string]string{
		"Authorization":     "Bearer key-a",
		"X-Original-Method": "PUT",
		"X-Original-Uri":    "/a/b.txt",
		"X-Request-Id":      res.Header.Get("X-Request-Id"),
		"Content-Length":    "",
		"Cookie":            "",
	} {
		if got := seen[0].Get(k); got != want {
			t.Errorf("the authorizer's %s: %q, want %q", k, got, want)
		}
	}

	res, b = f.do(t, http.MethodPut, "/a/b.txt", "key-a", []byte("v2"))
	if res.StatusCode != http.StatusNoContent {
		t.Fatalf("PUT again: %s: %s", res.Status, b)
	}
	if got, _ := os.ReadFile(p); string(got) != "v2" {
		t.Errorf("after a second PUT: %q", got)
	}
}

// TestUploadLog: each request is one JSON line of the cdnapi_upload format,
// with the project and the method as sent.
func TestUploadLog(t *testing.T) {
	f := startUpload(t, 0)
	res, _ := f.do(t, http.MethodPut, "/x.txt", "key-a", []byte("x"))
	f.do(t, http.MethodGet, "/x.txt", "key-a", nil)
	deadline := time.Now().Add(5 * time.Second)
	var b []byte
	for time.Now().Before(deadline) {
		b, _ = os.ReadFile(f.server.LogPath())
		if bytes.Count(b, []byte("\n")) >= 2 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 {
		t.Fatalf("%s: %q, want 2 lines", f.server.LogPath(), b)
	}
	var l struct {
		RequestID     string      `json:"request_id"`
		Msec          json.Number `json:"msec"`
		Project       string      `json:"project"`
		RequestMethod string      `json:"request_method"`
		URI           string      `json:"uri"`
		Status        int         `json:"status"`
		RequestLength int64       `json:"request_length"`
		AuthStatus    string      `json:"auth_status"`
	}
	dec := json.NewDecoder(strings.NewReader(lines[0]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		t.Fatalf("%s: %v", lines[0], err)
	}
	if l.RequestID != res.Header.Get("X-Request-Id") || l.Msec == "" || l.RequestLength == 0 ||
		l.Project != "alpha" || l.RequestMethod != "PUT" || l.URI != "/x.txt" || l.Status != 201 || l.AuthStatus != "204" {
		t.Errorf("log line %s", lines[0])
	}
	if !strings.Contains(lines[1], `"request_method":"GET"`) || !strings.Contains(lines[1], `"status":405`) {
		t.Errorf("log line %s", lines[1])
	}
}

// TestUploadProjectsIsolated: two keys writing the same path write each
// into its own project.
func TestUploadProjectsIsolated(t *testing.T) {
	f := startUpload(t, 0)
	for key, body := range map[string]string{"key-a": "from alpha", "key-b": "from beta"} {
		if res, b := f.do(t, http.MethodPut, "/same/name.txt", key, []byte(body)); res.StatusCode != http.StatusCreated {
			t.Fatalf("PUT with %s: %s: %s", key, res.Status, b)
		}
	}
	for project, want := range map[string]string{"alpha": "from alpha", "beta": "from beta"} {
		got, err := os.ReadFile(filepath.Join(f.root, nginx.UploadIncoming, project, "same", "name.txt"))
		if err != nil || string(got) != want {
			t.Errorf("project %s: %q, %v; want %q", project, got, err, want)
		}
	}
	if all := filesUnder(t, f.root); len(all) != 2 {
		t.Errorf("files under the root: %v, want 2", all)
	}
}

// TestUploadRefused: what cdnapi refuses comes back with its status and its
// JSON body, and nothing is written.
func TestUploadRefused(t *testing.T) {
	f := startUpload(t, 0)
	for _, c := range []struct {
		key    string
		status int
		code   string
	}{
		{"", 401, "authentication_required"},
		{"nope", 401, "api_key_invalid"},
		{"readonly", 403, "scope_missing"},
		{"malformed", 400, "path_invalid"},
	} {
		for _, m := range []string{http.MethodPut, http.MethodDelete} {
			var body []byte
			if m == http.MethodPut {
				body = []byte("x")
			}
			res, b := f.do(t, m, "/a.txt", c.key, body)
			what := m + " with key " + c.key
			errorBody(t, what, res, b, c.status, c.code)
			if c.status == 401 && !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Bearer ") {
				t.Errorf("%s: WWW-Authenticate %q", what, res.Header.Get("WWW-Authenticate"))
			}
		}
	}
	if all := filesUnder(t, f.root); len(all) != 0 {
		t.Errorf("files under the root: %v", all)
	}
}

// TestUploadBadProject: a project from cdnapi that is not project-shaped
// writes and removes nothing: 503.
func TestUploadBadProject(t *testing.T) {
	f := startUpload(t, 0)
	victim := filepath.Join(f.root, nginx.UploadOrigin, "beta", "a.txt")
	os.MkdirAll(filepath.Dir(victim), 0o755)
	os.WriteFile(victim, []byte("keep"), 0o644)
	for _, key := range []string{"key-dots", "key-path", "key-nul"} {
		res, b := f.do(t, http.MethodPut, "/a.txt", key, []byte("x"))
		errorBody(t, "PUT with "+key, res, b, 503, "upload_unavailable")
		res, b = f.do(t, http.MethodDelete, "/a.txt", key, nil)
		errorBody(t, "DELETE with "+key, res, b, 503, "upload_unavailable")
	}
	if all := filesUnder(t, f.root); len(all) != 1 {
		t.Errorf("files under the root: %v, want only %s", all, victim)
	}
}

// TestUploadTraversal: a path that could name another place than the one
// the client wrote is a 400, and creates nothing.
func TestUploadTraversal(t *testing.T) {
	f := startUpload(t, 0)
	for _, p := range []string{
		"/../x", "/%2e%2e/x", "/%2E%2E/x", "/.%2e/x", "/a/../../x", "/a/%2e%2e/%2e%2e/x",
		"//etc/passwd", "/a//b", "/a%2fb", "/a%2F..%2F..%2Fx", "/..%2fx", "/./x", "/a/%2e/x",
		"/..%5cx", "/a/..", "/%2e%2e",
	} {
		for _, m := range []string{http.MethodPut, http.MethodDelete} {
			var body []byte
			if m == http.MethodPut {
				body = []byte("escaped")
			}
			res, b := f.do(t, m, p, "key-a", body)
			errorBody(t, m+" "+p, res, b, 400, "path_invalid")
		}
	}
	if all := filesUnder(t, f.root); len(all) != 0 {
		t.Errorf("files under the root: %v", all)
	}
	if n := len(f.auth.requests()); n != 0 {
		t.Errorf("the authorizer was asked %d times", n)
	}
}

// TestUploadTooLarge: a body over MaxBytes is a 413, with a length sent or
// chunked, and leaves nothing behind; MaxBytes itself is taken.
func TestUploadTooLarge(t *testing.T) {
	f := startUpload(t, 1024)
	if res, b := f.do(t, http.MethodPut, "/fits", "key-a", make([]byte, 1024)); res.StatusCode != http.StatusCreated {
		t.Errorf("PUT of MaxBytes: %s: %s", res.Status, b)
	}
	res, b := f.do(t, http.MethodPut, "/big", "key-a", make([]byte, 1025))
	errorBody(t, "PUT of MaxBytes+1", res, b, 413, "file_too_large")

	req, _ := http.NewRequest(http.MethodPut, f.server.URL()+"/chunked", io.MultiReader(bytes.NewReader(make([]byte, 4096))))
	req.Header.Set("Authorization", "Bearer key-a")
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if len(res.TransferEncoding) != 0 || req.ContentLength != 0 {
		t.Logf("sent with Content-Length %d", req.ContentLength)
	}
	errorBody(t, "chunked PUT of 4 KiB", res, b, 413, "file_too_large")
	if all := filesUnder(t, f.root); len(all) != 1 {
		t.Errorf("files under the root: %v, want incoming/alpha/fits", all)
	}
}

// TestUploadMethods: only PUT and DELETE; the others are a 405 with Allow,
// and cdnapi is not asked. A folder's path is a 409.
func TestUploadMethods(t *testing.T) {
	f := startUpload(t, 0)
	for _, m := range []string{"GET", "HEAD", "POST", "PATCH", "OPTIONS", "MKCOL", "COPY", "MOVE", "PROPFIND", "LOCK"} {
		res, b := f.do(t, m, "/a.txt", "key-a", nil)
		if m == "HEAD" {
			if res.StatusCode != 405 {
				t.Errorf("HEAD: %s", res.Status)
			}
		} else {
			errorBody(t, m, res, b, 405, "method_not_allowed")
		}
		if got := res.Header.Get("Allow"); got != "PUT, DELETE" {
			t.Errorf("%s: Allow %q", m, got)
		}
	}
	if n := len(f.auth.requests()); n != 0 {
		t.Errorf("the authorizer was asked %d times", n)
	}
	res, b := f.do(t, http.MethodPut, "/folder/", "key-a", []byte("x"))
	errorBody(t, "PUT /folder/", res, b, 409, "path_is_folder")
	res, b = f.do(t, http.MethodDelete, "/", "key-a", nil)
	errorBody(t, "DELETE /", res, b, 409, "path_is_folder")
	// A file where the path needs a folder: nginx's WebDAV module answers
	// 500 (ENOTDIR), which becomes the 503 of any 500; nothing is written.
	f.do(t, http.MethodPut, "/file", "key-a", []byte("x"))
	res, b = f.do(t, http.MethodPut, "/file/under", "key-a", []byte("x"))
	errorBody(t, "PUT under a file", res, b, 503, "upload_unavailable")
}

// TestUploadDelete: DELETE removes the listed copy, in origin, of the key's
// project only.
func TestUploadDelete(t *testing.T) {
	f := startUpload(t, 0)
	alpha := filepath.Join(f.root, nginx.UploadOrigin, "alpha", "x", "y.txt")
	os.MkdirAll(filepath.Dir(alpha), 0o755)
	os.WriteFile(alpha, []byte("listed"), 0o644)

	res, b := f.do(t, http.MethodDelete, "/x/y.txt", "key-b", nil)
	errorBody(t, "DELETE by another project", res, b, 404, "not_found")
	if _, err := os.Stat(alpha); err != nil {
		t.Fatalf("another project's DELETE removed %s: %v", alpha, err)
	}
	if res, b := f.do(t, http.MethodDelete, "/x/y.txt", "key-a", nil); res.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %s: %s", res.Status, b)
	}
	if _, err := os.Stat(alpha); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s after DELETE: %v", alpha, err)
	}
	res, b = f.do(t, http.MethodDelete, "/x/y.txt", "key-a", nil)
	errorBody(t, "DELETE again", res, b, 404, "not_found")
}

// TestUploadUnavailable: cdnapi down is a 503 upload_unavailable with
// Retry-After; the upload server stopped refuses connections, and started
// again serves on the same address.
func TestUploadUnavailable(t *testing.T) {
	f := startUpload(t, 0)
	if res, _ := get(t, f.server.HealthURL()); res.StatusCode != http.StatusOK {
		t.Fatalf("health: %s", res.Status)
	}
	f.authTS.Close()
	res, b := f.do(t, http.MethodPut, "/a.txt", "key-a", []byte("x"))
	errorBody(t, "PUT with cdnapi down", res, b, 503, "upload_unavailable")
	if res.Header.Get("Retry-After") != "5" {
		t.Errorf("Retry-After %q", res.Header.Get("Retry-After"))
	}

	if err := f.server.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Get(f.server.HealthURL()); err == nil {
		t.Fatal("a stopped upload server answers")
	}
	if err := f.server.Start(); err != nil {
		t.Fatal(err)
	}
	if res, _ := get(t, f.server.HealthURL()); res.StatusCode != http.StatusOK {
		t.Errorf("health after Start: %s", res.Status)
	}
}
