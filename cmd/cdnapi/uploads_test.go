package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/apitest"
	"github.com/cdnapi/cdnapi/internal/auth"
	"github.com/cdnapi/cdnapi/internal/clamdtest"
	"github.com/cdnapi/cdnapi/internal/nginx"
	"github.com/cdnapi/cdnapi/internal/nginxtest"
)

// The tests of this file run the upload path as deployed: the upload server
// (Debian's nginx, deploy/nginx/upload.conf's config), ClamAV's clamd on a
// signature database of the tests' own (EICAR), `cdnapi serve` answering
// the upload server's auth_request and measuring both components, and
// `cdnapi uploads` promoting what is clean into the origin.

// uploadRig is the upload path on loopback, as a test drives it.
type uploadRig struct {
	root   string // the uploads root
	db     string
	upload *nginx.Server
	clam   *clamdtest.Server
	serve  *server
}

// startUploadRig starts clamd, the upload server and serve (with
// serveArgs) over db. `cdnapi uploads` is the caller's to start.
func startUploadRig(t testing.TB, db string, serveArgs ...string) *uploadRig {
	t.Helper()
	nginxtest.Require(t)
	p := &uploadRig{root: t.TempDir(), db: db}
	p.clam = clamdtest.Start(t, clamdtest.Options{})
	authAddr := freeAddr(t)
	p.upload = nginxtest.StartUpload(t, nginx.Upload{Root: p.root, Auth: authAddr, MaxBytes: 1 << 20})
	args := append([]string{"--db", db, "--auth", "required", "--upload-auth-addr", authAddr,
		"--uploads", p.root, "--clamd", p.clam.Addr(), "--upload-url", p.upload.URL()}, serveArgs...)
	p.serve = startServe(t, nil, args...)
	return p
}

// uploadsInProcess runs `cdnapi uploads` on the path in this process until
// the returned stop is called (or t ends).
func (p *uploadRig) uploadsInProcess(t testing.TB) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"uploads", p.root, "--clamd", p.clam.Addr(), "--db", p.db, "--rescan", "1s"},
			getenvFrom(nil), strings.NewReader(""), io.Discard, io.Discard)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("uploads: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// put uploads body to path with key ("" sends no Authorization) and
// returns the status and the body of the answer.
func (p *uploadRig) put(t testing.TB, key, path string, body []byte) (int, string) {
	t.Helper()
	return p.send(t, http.MethodPut, key, path, body)
}

func (p *uploadRig) send(t testing.TB, method, key, path string, body []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, p.upload.URL()+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// files returns the checksums of the files listed for key's project, by
// filename.
func (p *uploadRig) files(t *testing.T, v *apitest.Validator, key string) map[string]string {
	t.Helper()
	out := map[string]string{}
	u := p.serve.api + "/api/v1/files?limit=100"
	for {
		res, body := get(t, v, u, "Authorization", "Bearer "+key)
		if res.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s", u, res.StatusCode, body)
		}
		var page struct {
			Data []struct {
				Filename, Checksum string
			}
			NextCursor *string `json:"next_cursor"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatal(err)
		}
		for _, f := range page.Data {
			if _, dup := out[f.Filename]; dup {
				t.Errorf("%s listed twice", f.Filename)
			}
			out[f.Filename] = f.Checksum
		}
		if page.NextCursor == nil {
			return out
		}
		u = p.serve.api + "/api/v1/files?limit=100&cursor=" + *page.NextCursor
	}
}

// waitListed waits until name is listed for key's project with the
// checksum of body, and returns how long that took.
func (p *uploadRig) waitListed(t *testing.T, v *apitest.Validator, key, name string, body []byte, within time.Duration) time.Duration {
	t.Helper()
	want := fmt.Sprintf("sha256:%x", sha256.Sum256(body))
	start := time.Now()
	for {
		got, ok := p.files(t, v, key)[name]
		if ok && got == want {
			return time.Since(start)
		}
		if time.Since(start) > within {
			t.Fatalf("%s not listed with %s within %v (listed: %v, %q)", name, want, within, ok, got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// component returns the status of the named component from /api/v1/status.
func (p *uploadRig) component(t *testing.T, v *apitest.Validator, name string) cdnapi.Status {
	t.Helper()
	_, body := get(t, v, p.serve.api+"/api/v1/status")
	var doc cdnapi.StatusDocument
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	for _, c := range doc.Components {
		if c.Name == name {
			return c.Status
		}
	}
	t.Fatalf("no component %s in %s", name, body)
	return ""
}

// waitComponent waits until the named component reads want, and returns
// how long that took.
func (p *uploadRig) waitComponent(t *testing.T, v *apitest.Validator, name string, want cdnapi.Status, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		got := p.component(t, v, name)
		if got == want {
			return time.Since(start)
		}
		if time.Since(start) > within {
			t.Fatalf("%s reads %s %v after, want %s", name, got, within, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitIncident waits until the status history holds an incident of the
// named component.
func (p *uploadRig) waitIncident(t *testing.T, v *apitest.Validator, component string, within time.Duration) {
	t.Helper()
	for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		_, body := get(t, v, p.serve.api+"/api/v1/status/incidents")
		var page struct{ Data []struct{ Component string } }
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatal(err)
		}
		for _, inc := range page.Data {
			if inc.Component == component {
				return
			}
		}
		if time.Since(start) > within {
			t.Fatalf("no incident of %s within %v: %s", component, within, body)
		}
	}
}

// newKey runs `keys create` and returns the key and its id.
func newKey(t testing.TB, db, project, scope string) (key, id string) {
	t.Helper()
	out, errOut := mustRunCmd(t, "", "keys", "create", "--project", project, "--scope", scope, "--db", db)
	return strings.TrimSpace(out), regexp.MustCompile(`key_\w+`).FindString(errOut)
}

// filesUnder returns every regular file under root, by path from root.
func filesUnder(t testing.TB, root string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			rel, _ := filepath.Rel(root, path)
			out[rel] = true
		}
		return nil
	})
	return out
}

// TestUploads runs the upload path on both engines: an upload by an
// upload key is listed within 3 s with sha256sum's checksum, and the EICAR
// test file is quarantined, never listed, and told to a webhook once,
// signed.
func TestUploads(t *testing.T) {
	for _, engine := range edgeEngines {
		t.Run(engine.name, func(t *testing.T) {
			db := engine.dsn(t)
			hooks := newHookReceiver(t)
			addHook(t, hooks, db)
			upKey, _ := newKey(t, db, "site", "upload")
			readKey, _ := newKey(t, db, "site", "read")
			p := startUploadRig(t, db, webhookServeFlags...)
			p.uploadsInProcess(t)
			v := apitest.NewValidator(t)

			logo := bytes.Repeat([]byte("a logo\n"), 10000)
			if code, body := p.put(t, upKey, "/img/logo.png", logo); code != http.StatusCreated {
				t.Fatalf("PUT /img/logo.png: %d %s", code, body)
			}
			took := p.waitListed(t, v, readKey, "img/logo.png", logo, 3*time.Second)
			t.Logf("uploaded to listed in %v", took.Round(time.Millisecond))

			if code, body := p.put(t, upKey, "/docs/eicar.txt", []byte(clamdtest.EICAR)); code != http.StatusCreated {
				t.Fatalf("PUT the EICAR file: %d %s", code, body)
			}
			e := hooks.waitEvent(t, string(cdnapi.EventFileQuarantined), 30*time.Second)
			if e.Data.Project != "site" || e.Data.Path != "docs/eicar.txt" || !strings.Contains(e.Data.Signature, "Eicar") ||
				e.Data.Checksum != fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(clamdtest.EICAR))) {
				t.Errorf("file.quarantined %+v", e.Data)
			}
			if _, listed := p.files(t, v, readKey)["docs/eicar.txt"]; listed {
				t.Error("the EICAR file is listed")
			}
			in := filesUnder(t, filepath.Join(p.root, "quarantine", "site"))
			if len(in) != 1 {
				t.Errorf("the quarantine holds %v, want the EICAR file", in)
			}
			if filesUnder(t, filepath.Join(p.root, "origin", "site"))["docs/eicar.txt"] {
				t.Error("the EICAR file is in the origin")
			}
			// Once: a later upload's promotion tells nothing more.
			more := []byte("more")
			p.put(t, upKey, "/more.txt", more)
			p.waitListed(t, v, readKey, "more.txt", more, 3*time.Second)
			events, accepted, _, bad := hooks.snapshot()
			var n int
			for _, e := range events {
				if e.Type == string(cdnapi.EventFileQuarantined) {
					n++
					if accepted[e.ID] != 1 {
						t.Errorf("file.quarantined %s accepted %d times", e.ID, accepted[e.ID])
					}
				}
			}
			if n != 1 || len(bad) > 0 {
				t.Errorf("%d file.quarantined events, bad deliveries %v", n, bad)
			}
		})
	}
}

// TestUploadRefusals: who may upload, and where. No key, a wrong or
// revoked key: 401; a read key: 403; a path out of the project's folder,
// a hidden name or one the files list refuses: 400, with nothing written
// anywhere; two projects never see each other's files. On both engines:
// the key's scope and revocation, and each project's list, are store reads.
func TestUploadRefusals(t *testing.T) {
	for _, engine := range edgeEngines {
		t.Run(engine.name, func(t *testing.T) { testUploadRefusals(t, engine.dsn(t)) })
	}
}

func testUploadRefusals(t *testing.T, db string) {
	upKey, upID := newKey(t, db, "site", "upload")
	readKey, _ := newKey(t, db, "site", "read")
	otherKey, _ := newKey(t, db, "other", "upload")
	otherRead, _ := newKey(t, db, "other", "read")
	p := startUploadRig(t, db)
	p.uploadsInProcess(t)
	v := apitest.NewValidator(t)

	for _, tc := range []struct {
		key  string
		want int
	}{
		{"", http.StatusUnauthorized},
		{"cdk_" + strings.Repeat("x", 32), http.StatusUnauthorized},
		{readKey, http.StatusForbidden},
	} {
		code, body := p.put(t, tc.key, "/refused.txt", []byte("x"))
		if code != tc.want || !json.Valid([]byte(body)) || !strings.Contains(body, `"error"`) {
			t.Errorf("PUT with key %.8q: %d %s, want %d and a JSON error", tc.key, code, body, tc.want)
		}
	}

	// A link already in the tree, pointing out of it.
	outside := t.TempDir()
	if err := os.MkdirAll(filepath.Join(p.root, "incoming", "site"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(p.root, "incoming", "site", "link")); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{
		"/../evil0.txt", "/a/../../evil1.txt", "/%2e%2e/evil2.txt", "/a/%2E%2E/%2e%2e/evil3.txt",
		"/..%2fevil4.txt", "/%2e%2e%2fevil5.txt", "//etc/evil6.txt", "/link/evil7.txt",
		"/.hidden-evil8.txt", "/a/.git/evil9.txt", "/bad%01evil10.txt", "/a%5c..%5cevil11.txt",
	} {
		code, body := rawPut(t, p.upload.Addr(), upKey, path, "evil")
		if code != http.StatusBadRequest {
			t.Errorf("PUT %s: %d %s, want 400", path, code, body)
		} else if !json.Valid([]byte(body)) {
			t.Errorf("PUT %s: body %q is not JSON", path, body)
		}
	}
	for _, dir := range []string{p.root, outside, filepath.Dir(p.root)} {
		for f := range filesUnder(t, dir) {
			if strings.Contains(f, "evil") {
				t.Errorf("a refused upload wrote %s under %s", f, dir)
			}
		}
	}

	// Two projects, one path: each lists its own.
	mine, theirs := []byte("site's"), []byte("other's")
	p.put(t, upKey, "/shared.txt", mine)
	p.put(t, otherKey, "/shared.txt", theirs)
	p.waitListed(t, v, readKey, "shared.txt", mine, 3*time.Second)
	p.waitListed(t, v, otherRead, "shared.txt", theirs, 3*time.Second)

	// DELETE of a listed file takes it out of the list.
	if code, body := p.send(t, http.MethodDelete, upKey, "/shared.txt", nil); code != http.StatusNoContent {
		t.Fatalf("DELETE /shared.txt: %d %s", code, body)
	}
	for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		if _, ok := p.files(t, v, readKey)["shared.txt"]; !ok {
			break
		}
		if time.Since(start) > 5*time.Second {
			t.Fatal("shared.txt still listed 5s after its DELETE")
		}
	}
	if _, ok := p.files(t, v, otherRead)["shared.txt"]; !ok {
		t.Error("the DELETE of site's shared.txt took other's")
	}

	// Too large.
	if code, body := p.put(t, upKey, "/big.bin", make([]byte, 2<<20)); code != http.StatusRequestEntityTooLarge || !json.Valid([]byte(body)) {
		t.Errorf("PUT of 2 MiB over a 1 MiB limit: %d %s", code, body)
	}

	// Revoked: 401 within the verifier's refresh.
	mustRunCmd(t, "", "keys", "revoke", upID, "--db", db)
	revoked := time.Now()
	for i := 0; ; i++ {
		code, _ := p.put(t, upKey, fmt.Sprintf("/after-revoke-%d.txt", i), []byte("x"))
		if code == http.StatusUnauthorized {
			break
		}
		if time.Since(revoked) > auth.DefaultRefreshInterval+time.Second {
			t.Fatalf("the revoked key still uploads (%d) after %v", code, time.Since(revoked))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// rawPut sends a PUT whose request target is exactly path, bypassing the
// cleaning an HTTP client may do, and returns the status and body.
func rawPut(t *testing.T, addr, key, path, body string) (int, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "PUT %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		path, addr, key, len(body), body)
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("PUT %s: %v", path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestUploadScanTimeout: a clamd that takes a scan and never answers
// (frozen with SIGSTOP: the kernel still queues the connection and takes the
// request, so the client waits for a reply, as on a clamd that is stuck)
// costs a scan no more than --scan-timeout. The timeout is counted and
// logged, the file waits unlisted and out of the origin, and once clamd
// runs again the retry promotes it and it is listed.
func TestUploadScanTimeout(t *testing.T) {
	db := migratedDB(t, "timeout.db")
	root := t.TempDir()
	clam := clamdtest.Start(t, clamdtest.Options{})
	metricsAddr := freeAddr(t)
	metrics := "http://" + metricsAddr + "/metrics"
	var logs syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"uploads", root, "--clamd", clam.Addr(), "--db", db, "--rescan", "1s",
			"--scan-timeout", "1s", "--metrics-addr", metricsAddr},
			getenvFrom(nil), strings.NewReader(""), io.Discard, &logs)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("uploads: %v", err)
		}
	})
	st := openTestStore(t, db)
	// scans returns the count of scans with result, once the metrics are
	// served (so the tree is open), polling until then.
	scans := func(result string) int {
		t.Helper()
		for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
			if n, err := scrapeCounter(metrics, `cdnapi_uploads_scans_total{result="`+result+`"}`); err == nil {
				return n
			} else if time.Since(start) > 2*time.Minute {
				t.Fatalf("no metrics from cdnapi uploads: %v\n%s", err, logs.String())
			}
		}
	}
	scans("timeout")

	clam.Freeze(t)
	body := []byte("uploaded while clamd hangs")
	// As the upload server writes: whole, then renamed into place.
	tmp := filepath.Join(root, "upload.tmp")
	if err := os.WriteFile(tmp, body, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "incoming", "site"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(root, "incoming", "site", "hung.txt")); err != nil {
		t.Fatal(err)
	}
	// The guard is minutes, far over the 1 s asked for: without a timeout
	// the scan never ends, and this fails rather than hangs.
	for start := time.Now(); scans("timeout") == 0; time.Sleep(50 * time.Millisecond) {
		if time.Since(start) > 2*time.Minute {
			t.Fatalf("no scan timed out %v after the upload, with clamd frozen:\n%s", time.Since(start), logs.String())
		}
	}
	if !strings.Contains(logs.String(), `"msg":"uploads: a scan timed out; the file waits in staging and is retried","project":"site","path":"hung.txt"`) {
		t.Errorf("no log line of the timeout:\n%s", logs.String())
	}
	if filesUnder(t, filepath.Join(root, "origin"))["site/hung.txt"] {
		t.Fatal("a file whose scan timed out is in the origin")
	}
	if !filesUnder(t, filepath.Join(root, "staging"))["site/hung.txt"] && !filesUnder(t, filepath.Join(root, "incoming"))["site/hung.txt"] {
		t.Fatalf("the file is neither in staging nor in incoming: %v", filesUnder(t, root))
	}
	if listed := listedChecksums(t, st, "site"); len(listed) != 0 {
		t.Fatalf("listed while its scan timed out: %v", listed)
	}

	clam.Thaw(t)
	want := fmt.Sprintf("sha256:%x", sha256.Sum256(body))
	for start := time.Now(); listedChecksums(t, st, "site")["hung.txt"] != want; time.Sleep(50 * time.Millisecond) {
		if time.Since(start) > 2*time.Minute {
			t.Fatalf("hung.txt not listed %v after clamd was thawed: %v\n%s", time.Since(start), filesUnder(t, root), logs.String())
		}
	}
	if n := scans("clean"); n != 1 {
		t.Errorf("%d clean scans, want the one that promoted hung.txt", n)
	}
}

// listedChecksums returns the checksums of project's listed files, by
// filename, read from the store.
func listedChecksums(t *testing.T, st store, project string) map[string]string {
	t.Helper()
	page, err := st.ListFiles(t.Context(), cdnapi.FileQuery{Project: project, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range page {
		out[f.Filename] = f.Checksum
	}
	return out
}

// scrapeCounter reads the value of the sample named (with its labels) from
// the Prometheus text at url.
func scrapeCounter(url, sample string) (int, error) {
	res, err := http.Get(url)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), sample+" "); ok {
			var n float64
			_, err := fmt.Sscan(v, &n)
			return int(n), err
		}
	}
	return 0, fmt.Errorf("no %s in %s", sample, url)
}

// TestUploadsSurviveKill kills `cdnapi uploads` (a process of its own) with
// SIGKILL during a burst of 1,000 uploads, one in 50 of them the EICAR
// file, and starts it again: every clean file is listed exactly once, with
// its checksum, and no infected one ever reaches the origin.
func TestUploadsSurviveKill(t *testing.T) {
	db := migratedDB(t, "kill.db")
	upKey, _ := newKey(t, db, "site", "upload")
	readKey, _ := newKey(t, db, "site", "read")
	p := startUploadRig(t, db)
	v := apitest.NewValidator(t)

	start := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "--", "uploads", p.root, "--clamd", p.clam.Addr(), "--db", db, "--rescan", "1s")
		cmd.Env = append(os.Environ(), "CDNAPI_TEST_AS_MAIN=1")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	cmd := start()

	// Watch the origin the whole time: an infected file there, even for
	// a moment, is a file promoted unscanned.
	origin := filepath.Join(p.root, "origin", "site")
	watchDone := make(chan []string)
	stopWatch := make(chan struct{})
	go func() {
		var seen []string
		for {
			for f := range filesUnder(t, origin) {
				if strings.Contains(f, "infected") {
					seen = append(seen, f)
				}
			}
			select {
			case <-stopWatch:
				watchDone <- seen
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()

	const n = 1000
	clean := map[string][]byte{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	next := make(chan int)
	for range 4 {
		wg.Go(func() {
			for i := range next {
				name, body := fmt.Sprintf("burst/clean-%04d.txt", i), []byte(fmt.Sprintf("file %d\n", i))
				if i%50 == 0 {
					name, body = fmt.Sprintf("burst/infected-%04d.txt", i), []byte(clamdtest.EICAR)
				} else {
					mu.Lock()
					clean[name] = body
					mu.Unlock()
				}
				if code, resp := p.put(t, upKey, "/"+name, body); code != http.StatusCreated {
					t.Errorf("PUT %s: %d %s", name, code, resp)
				}
			}
		})
	}
	killed := false
	for i := range n {
		next <- i
		if !killed && i > n/4 && len(filesUnder(t, origin)) > 50 {
			cmd.Process.Kill()
			cmd.Wait()
			killed = true
			t.Logf("killed cdnapi uploads after %d uploads, with %d files in the origin", i, len(filesUnder(t, origin)))
			cmd = start()
		}
	}
	close(next)
	wg.Wait()
	if !killed {
		t.Fatal("the uploads ended before any was promoted: nothing was killed midway")
	}

	deadline := time.Now().Add(2 * time.Minute)
	var listed map[string]string
	for {
		listed = p.files(t, v, readKey)
		if len(listed) >= len(clean) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	close(stopWatch)
	if seen := <-watchDone; len(seen) > 0 {
		t.Errorf("infected files in the origin: %v", seen)
	}
	for name, body := range clean {
		if want := fmt.Sprintf("sha256:%x", sha256.Sum256(body)); listed[name] != want {
			t.Errorf("%s listed as %q, want %s", name, listed[name], want)
		}
	}
	if len(listed) != len(clean) {
		t.Errorf("%d files listed, want the %d clean ones", len(listed), len(clean))
	}
	if q := filesUnder(t, filepath.Join(p.root, "quarantine", "site")); len(q) != n/50 {
		t.Errorf("%d files in quarantine, want %d", len(q), n/50)
	}
}

// BenchmarkUploadToListed uploads 64 KiB files at 50 a second (UPLOAD_RATE)
// for 20 seconds (UPLOAD_SECONDS) through the whole path, and reports how
// long each took from its PUT to its listing, p50 and p99: the origin's
// settle second included. scripts/bench-uploads runs it.
func BenchmarkUploadToListed(b *testing.B) {
	rate, seconds := envInt("UPLOAD_RATE", 50), envInt("UPLOAD_SECONDS", 20)
	for b.Loop() {
		db := migratedDB(b, "bench.db")
		upKey, _ := newKey(b, db, "site", "upload")
		p := startUploadRig(b, db)
		p.uploadsInProcess(b)
		st := openTestStore(b, db)

		var mu sync.Mutex
		sent := map[string]time.Time{}
		total := rate * seconds
		// The poller notes when each upload is first listed.
		var lags []time.Duration
		listed := map[string]bool{}
		polled := make(chan error, 1)
		go func() {
			for deadline := time.Now().Add(time.Duration(seconds)*time.Second + time.Minute); len(listed) < total; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					polled <- fmt.Errorf("%d of %d uploads listed", len(listed), total)
					return
				}
				page, err := st.ListFiles(context.Background(), cdnapi.FileQuery{Project: "site", Limit: 1000})
				if err != nil {
					polled <- err
					return
				}
				now := time.Now()
				mu.Lock()
				for _, f := range page {
					if at, ok := sent[f.Filename]; ok && !listed[f.Filename] {
						listed[f.Filename] = true
						lags = append(lags, now.Sub(at))
					}
				}
				mu.Unlock()
			}
			polled <- nil
		}()

		body := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB
		tick := time.NewTicker(time.Second / time.Duration(rate))
		var wg sync.WaitGroup
		for i := range total {
			<-tick.C
			name := fmt.Sprintf("bench/%05d.bin", i)
			mu.Lock()
			sent[name] = time.Now()
			mu.Unlock()
			wg.Go(func() {
				if code, resp := p.put(b, upKey, "/"+name, body); code != http.StatusCreated {
					b.Errorf("PUT %s: %d %s", name, code, resp)
				}
			})
		}
		tick.Stop()
		wg.Wait()
		if err := <-polled; err != nil {
			b.Fatal(err)
		}
		slices.Sort(lags)
		b.ReportMetric(lags[len(lags)/2].Seconds(), "p50-s")
		b.ReportMetric(lags[len(lags)*99/100].Seconds(), "p99-s")
		b.ReportMetric(lags[len(lags)-1].Seconds(), "max-s")
	}
}
