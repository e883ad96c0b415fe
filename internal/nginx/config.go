package nginx

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Site is what one nginx serves: an Origin or an Edge.
type Site interface {
	// httpBlock returns the directives of the http context for an nginx
	// whose prefix directory is dir and that listens on addr.
	httpBlock(dir, addr string) (string, error)
}

// Origin serves the files of a directory, with the ETag and Last-Modified
// headers nginx gives static files, so that an edge in front can revalidate.
type Origin struct {
	Root string // the directory served at /
}

// Edge is a cache in front of an origin, in one region, logging every
// request in the cdnapi format of deploy/nginx/cdnapi-log.conf, as
// deploy/nginx/edge.conf does.
type Edge struct {
	Region string // the region code of its lines, such as FRA1
	Origin string // the origin's base URL, such as http://127.0.0.1:18180
	// LogPath is the access log (default: access.log in the server's
	// directory).
	LogPath string
	// LogFormat is the file that defines the cdnapi log format (default:
	// the repository's deploy/nginx/cdnapi-log.conf, see LogFormatFile).
	// It is included as it is, so that what runs is what operators install.
	LogFormat string
	// CacheValid is how long answers 200 are kept (default 10m).
	CacheValid time.Duration
}

// regionCode is the shape of a region code (ingest checks the same).
var regionCode = regexp.MustCompile(`^[A-Z]{3}[0-9]$`)

// httpBlock serves Root; an unknown path is a 404, and nothing is logged.
func (o Origin) httpBlock(dir, addr string) (string, error) {
	root, err := filepath.Abs(o.Root)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("origin root %s is not a directory (%v)", root, err)
	}
	r, err := quote(root)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf(`    access_log off;
    server {
        listen %s;
        root %s;
        location / {
            try_files $uri =404;
        }
    }
`, addr, r), nil
}

// httpBlock renders the edge's cache, log and server. Keep it in step with
// deploy/nginx/edge.conf, which operators start from (TestEdgeMatchesShipped).
func (e Edge) httpBlock(dir, addr string) (string, error) {
	if !regionCode.MatchString(e.Region) {
		return "", fmt.Errorf("edge region %q: want a code such as FRA1", e.Region)
	}
	u, err := url.Parse(e.Origin)
	if err != nil || u.Scheme != "http" || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return "", fmt.Errorf("edge origin %q: want a URL such as http://127.0.0.1:8080", e.Origin)
	}
	logFormat := e.LogFormat
	if logFormat == "" {
		if logFormat, err = LogFormatFile(); err != nil {
			return "", err
		}
	}
	valid := e.CacheValid
	if valid == 0 {
		valid = 10 * time.Minute
	}
	var quoted []string
	for _, p := range []string{logFormat, filepath.Join(dir, "cache"), e.logPath(dir)} {
		q, err := quote(p)
		if err != nil {
			return "", err
		}
		quoted = append(quoted, q)
	}
	return fmt.Sprintf(`    include %s;
    access_log off;
    proxy_cache_path %s levels=1:2 keys_zone=edge:1m max_size=1g inactive=1h use_temp_path=off;

    server {
        listen %s;
        set $cdnapi_region %s;
        access_log %s cdnapi;
        add_header X-Request-Id $request_id always;
        add_header X-Cache-Status $upstream_cache_status always;

        location = /health {
            access_log off;
            default_type text/plain;
            return 200 "ok\n";
        }

        location / {
            proxy_pass http://%s;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header X-Request-Id $request_id;
            proxy_cache edge;
            proxy_cache_valid 200 206 %ds;
            proxy_cache_valid 301 302 404 1m;
            proxy_cache_lock on;
            proxy_cache_revalidate on;
            proxy_cache_use_stale error timeout updating http_500 http_502 http_503 http_504;
        }
    }
`, quoted[0], quoted[1], addr, e.Region, quoted[2], u.Host, int(valid.Seconds())), nil
}

// logPath is the edge's access log in a server whose directory is dir.
func (e Edge) logPath(dir string) string {
	if e.LogPath == "" {
		return filepath.Join(dir, "access.log")
	}
	p, err := filepath.Abs(e.LogPath)
	if err != nil {
		return e.LogPath
	}
	return p
}

// mainConfig renders nginx.conf for a server in dir. Every path nginx would
// otherwise take from its build (Debian's: /var/lib/nginx, /run/nginx.pid,
// /var/log/nginx) is set inside dir, so nothing outside it is touched and
// several servers run side by side.
func mainConfig(dir, addr string, site Site) (string, error) {
	q, err := quote(dir)
	if err != nil {
		return "", err
	}
	block, err := site.httpBlock(dir, addr)
	if err != nil {
		return "", err
	}
	// As root, nginx's workers switch to the user nobody, who cannot enter
	// a test's temporary directory (0700, root's) nor read a root-only
	// origin directory. These servers are throwaway and listen on
	// loopback, so their workers stay root rather than open every
	// directory on the way to everyone. As another user, nginx cannot
	// switch and the directive would only warn.
	user := ""
	if os.Geteuid() == 0 {
		user = "user root;\n"
	}
	tmp := func(name string) string { return strings.TrimSuffix(q, `"`) + "/tmp/" + name + `"` }
	return fmt.Sprintf(`# Rendered by internal/nginx; the server's directory is %[1]s.
%[2]s# In the foreground: the process that starts nginx supervises it (a test)
# or records its pid (scripts/cdn), and stops it by that pid.
daemon off;
worker_processes 1;
pid %[3]s;
# notice: the start and the signals handled are logged, which error messages
# quote.
error_log %[4]s notice;
# A graceful stop (SIGQUIT) waits for requests in flight, not longer.
worker_shutdown_timeout 10s;

events {
    worker_connections 512;
}

http {
    client_body_temp_path %[5]s;
    proxy_temp_path %[6]s;
    fastcgi_temp_path %[7]s;
    uwsgi_temp_path %[8]s;
    scgi_temp_path %[9]s;
    types {
        text/html html;
        text/css css;
        text/plain txt;
        application/javascript js;
        application/json json;
        image/png png;
        image/jpeg jpg;
        image/svg+xml svg;
        font/woff2 woff2;
        video/mp4 mp4;
    }
    default_type application/octet-stream;
    server_tokens off;

%[10]s}
`, q, user, strings.TrimSuffix(q, `"`)+`/nginx.pid"`, strings.TrimSuffix(q, `"`)+`/error.log"`,
		tmp("client_body"), tmp("proxy"), tmp("fastcgi"), tmp("uwsgi"), tmp("scgi"), block), nil
}

// quote returns p as an nginx string. A path with "$" is refused: some
// directives (access_log) read variables in it, and no path here needs one.
func quote(p string) (string, error) {
	if strings.ContainsAny(p, "$\x00\n\r") {
		return "", errors.New("nginx: path with $ or a control character: " + p)
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(p) + `"`, nil
}
