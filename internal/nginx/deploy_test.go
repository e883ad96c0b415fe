package nginx_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cdnapi/cdnapi/internal/nginx"
	"github.com/cdnapi/cdnapi/internal/nginxtest"
)

// The files of deploy/nginx, as an operator installs them.
const (
	logConf  = "../../deploy/nginx/cdnapi-log.conf"
	edgeConf = "../../deploy/nginx/edge.conf"
)

// TestShippedConfigIsValid runs nginx -t on a main configuration that
// includes deploy/nginx/cdnapi-log.conf and deploy/nginx/edge.conf as
// Debian's nginx.conf would (both in the http context), with the paths
// edge.conf writes moved into a temporary directory.
func TestShippedConfigIsValid(t *testing.T) {
	bin := nginxtest.Require(t)
	dir := t.TempDir()
	edge, err := os.ReadFile(edgeConf)
	if err != nil {
		t.Fatal(err)
	}
	rewritten := strings.NewReplacer(
		"/var/log/nginx/", dir+"/log/",
		"/var/cache/nginx/", dir+"/cache/",
	).Replace(string(edge))
	if rewritten == string(edge) {
		t.Fatal("edge.conf no longer writes under /var/log/nginx or /var/cache/nginx: update this test")
	}
	for _, d := range []string{"log", "cache", "tmp"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "edge.conf"), []byte(rewritten), 0o644); err != nil {
		t.Fatal(err)
	}
	logPath, err := filepath.Abs(logConf)
	if err != nil {
		t.Fatal(err)
	}
	main := `daemon off;
pid ` + dir + `/nginx.pid;
error_log ` + dir + `/error.log;
events {}
http {
    client_body_temp_path ` + dir + `/tmp/client_body;
    proxy_temp_path ` + dir + `/tmp/proxy;
    fastcgi_temp_path ` + dir + `/tmp/fastcgi;
    uwsgi_temp_path ` + dir + `/tmp/uwsgi;
    scgi_temp_path ` + dir + `/tmp/scgi;
    include ` + logPath + `;
    include ` + dir + `/edge.conf;
}
`
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "-p", dir+"/", "-c", conf, "-e", filepath.Join(dir, "error.log"), "-t").CombinedOutput()
	if err != nil {
		t.Fatalf("nginx -t: %v\n%s", err, out)
	}
	// "warn" would mean nginx accepted something it thinks is wrong.
	if strings.Contains(string(out), "[warn]") || strings.Contains(string(out), "[emerg]") {
		t.Errorf("nginx -t complains:\n%s", out)
	}
}

// TestLogFormatIsTheContract pins the log format's fields: the follower
// parses these names, so a change here is a change of its input.
func TestLogFormatIsTheContract(t *testing.T) {
	b, err := os.ReadFile(logConf)
	if err != nil {
		t.Fatal(err)
	}
	want := `log_format cdnapi escape=json
    '{"request_id":"$request_id","msec":$msec,"region":"$cdnapi_region",'
    '"request_method":"$request_method","uri":"$uri","status":$status,'
    '"body_bytes_sent":$body_bytes_sent,"upstream_cache_status":"$upstream_cache_status"}';
`
	if !strings.HasSuffix(string(b), want) {
		t.Errorf("%s does not end with the contract's log_format:\n%s", logConf, want)
	}
	// And the rendered edge uses that file, not a copy of it.
	if p, err := nginx.LogFormatFile(); err != nil {
		t.Fatal(err)
	} else if abs, _ := filepath.Abs(logConf); p != abs {
		t.Errorf("LogFormatFile() = %s, want %s", p, abs)
	}
}

// TestEdgeMatchesShipped checks that the edge that tests and scripts/cdn run
// has the directives that make deploy/nginx/edge.conf an edge: what the
// tests prove of one holds of the other.
func TestEdgeMatchesShipped(t *testing.T) {
	nginxtest.Require(t) // New runs nginx -t
	shipped, err := os.ReadFile(edgeConf)
	if err != nil {
		t.Fatal(err)
	}
	s, err := nginx.New(t.TempDir(), "127.0.0.1:1", nginx.Edge{Region: "FRA1", Origin: "http://127.0.0.1:2"})
	if err != nil {
		t.Fatal(err)
	}
	rendered, err := os.ReadFile(s.ConfPath())
	if err != nil {
		t.Fatal(err)
	}
	space := regexp.MustCompile(`\s+`)
	norm := func(b []byte) string { return space.ReplaceAllString(string(b), " ") }
	for _, d := range []string{
		`set $cdnapi_region FRA1;`,
		` cdnapi;`, // access_log PATH cdnapi;
		`add_header X-Request-Id $request_id always;`,
		`add_header X-Cache-Status $upstream_cache_status always;`,
		`location = /health { access_log off; default_type text/plain; return 200 "ok\n"; }`,
		`proxy_set_header X-Request-Id $request_id;`,
		`proxy_cache_valid 301 302 404 1m;`,
		`proxy_cache_lock on;`,
		`proxy_cache_revalidate on;`,
		`proxy_cache_use_stale error timeout updating http_500 http_502 http_503 http_504;`,
	} {
		if !strings.Contains(norm(shipped), d) {
			t.Errorf("deploy/nginx/edge.conf lacks %q", d)
		}
		if !strings.Contains(norm(rendered), d) {
			t.Errorf("the rendered edge lacks %q", d)
		}
	}
}

// shippedUpload is the Upload that deploy/nginx/upload.conf is rendered
// from: the values deploy/nginx/README.md documents.
var shippedUpload = nginx.Upload{
	Root:    "/srv/cdnapi/uploads",
	Auth:    "127.0.0.1:8082",
	LogPath: "/var/log/nginx/cdnapi-upload.log",
}

const uploadConf = "../../deploy/nginx/upload.conf"

// TestUploadMatchesShipped: deploy/nginx/upload.conf is what Upload.Render
// makes of the documented values, so what the upload tests prove holds of
// it. UPDATE_SHIPPED=1 writes it.
func TestUploadMatchesShipped(t *testing.T) {
	rendered, err := shippedUpload.Render("80")
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("UPDATE_SHIPPED") == "1" {
		if err := os.WriteFile(uploadConf, []byte(rendered), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	shipped, err := os.ReadFile(uploadConf)
	if err != nil {
		t.Fatal(err)
	}
	if string(shipped) != rendered {
		t.Errorf("%s is not Upload.Render's output for the documented values (UPDATE_SHIPPED=1 go test -run TestUploadMatchesShipped ./internal/nginx/ writes it)", uploadConf)
	}
}

// TestShippedUploadIsValid runs nginx -t on deploy/nginx/upload.conf as
// Debian's nginx.conf would include it, with the paths it writes moved into
// a temporary directory.
func TestShippedUploadIsValid(t *testing.T) {
	bin := nginxtest.Require(t)
	dir := t.TempDir()
	b, err := os.ReadFile(uploadConf)
	if err != nil {
		t.Fatal(err)
	}
	rewritten := strings.NewReplacer(
		"/var/log/nginx/", dir+"/log/",
		"/srv/cdnapi/uploads/", dir+"/uploads/",
		"listen 80;", "listen 127.0.0.1:1;",
	).Replace(string(b))
	if strings.Count(rewritten, dir) != 4 {
		t.Fatal("upload.conf no longer writes its log under /var/log/nginx and its files under /srv/cdnapi/uploads: update this test")
	}
	for _, d := range []string{"log", "uploads/incoming", "uploads/origin", "uploads/tmp", "tmp"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "upload.conf"), []byte(rewritten), 0o644); err != nil {
		t.Fatal(err)
	}
	main := `daemon off;
pid ` + dir + `/nginx.pid;
error_log ` + dir + `/error.log;
events {}
http {
    client_body_temp_path ` + dir + `/tmp/client_body;
    proxy_temp_path ` + dir + `/tmp/proxy;
    fastcgi_temp_path ` + dir + `/tmp/fastcgi;
    uwsgi_temp_path ` + dir + `/tmp/uwsgi;
    scgi_temp_path ` + dir + `/tmp/scgi;
    include ` + dir + `/upload.conf;
}
`
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "-p", dir+"/", "-c", conf, "-e", filepath.Join(dir, "error.log"), "-t").CombinedOutput()
	if err != nil {
		t.Fatalf("nginx -t: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "[warn]") || strings.Contains(string(out), "[emerg]") {
		t.Errorf("nginx -t complains:\n%s", out)
	}
}
