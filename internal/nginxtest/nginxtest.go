// Package nginxtest starts throwaway nginx servers for tests (internal/nginx):
// an origin serving a directory, cdnapi edges in front of it, and upload
// servers in front of an authorizer, each on a
// free 127.0.0.1 port with its files in the test's temporary directory,
// stopped when the test ends.
//
// Without nginx a test skips, except when the environment variable CI is
// "true": there it fails, so CI never passes by skipping.
package nginxtest

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cdnapi/cdnapi/internal/nginx"
)

// Require returns the path of nginx, or ends tb: a skip when nginx is not
// installed, a failure when CI=true.
func Require(tb testing.TB) string {
	tb.Helper()
	bin, err := nginx.Binary()
	if err != nil {
		missing(tb, err, os.Getenv("CI"))
	}
	return bin
}

// missing ends tb for the lack of nginx.
func missing(tb testing.TB, err error, ci string) {
	tb.Helper()
	if ci == "true" {
		tb.Fatalf("nginxtest: nginx is required when CI=true (apt-get install nginx): %v", err)
		return
	}
	tb.Skipf("nginxtest: skipping, nginx is not installed: %v", err)
}

// StartOrigin starts an origin serving the files of root. It is stopped
// when tb ends.
func StartOrigin(tb testing.TB, root string) *nginx.Server {
	tb.Helper()
	return start(tb, nginx.Origin{Root: root})
}

// StartEdge starts an edge; e.Origin is usually an origin's URL. Its access
// log is e.LogPath, or access.log in its directory (Server.LogPath). It is
// stopped when tb ends.
func StartEdge(tb testing.TB, e nginx.Edge) *nginx.Server {
	tb.Helper()
	return start(tb, e)
}

// start renders site in a new temporary directory and starts it on a free
// port. Another process may take the port between the pick and nginx's bind,
// so a failed start is tried again on another port.
func start(tb testing.TB, site nginx.Site) *nginx.Server {
	tb.Helper()
	Require(tb)
	dir := tb.TempDir()
	var lastErr error
	for range 3 {
		port, err := freePort()
		if err != nil {
			tb.Fatalf("nginxtest: %v", err)
		}
		s, err := nginx.New(dir, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), site)
		if err != nil {
			tb.Fatalf("nginxtest: %v", err) // a bad site: another port will not help
		}
		if lastErr = s.Start(); lastErr == nil {
			tb.Cleanup(func() {
				if err := s.Stop(); err != nil {
					tb.Errorf("nginxtest: %v", err)
				}
			})
			return s
		}
		if !strings.Contains(lastErr.Error(), "in use") {
			break
		}
	}
	tb.Fatalf("nginxtest: %v", lastErr)
	return nil
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// StartUpload starts an upload server (the Upload Service) in front of the
// authorizer at u.Auth, writing under u.Root, whose incoming, origin and tmp
// folders it creates. Its access log is u.LogPath, or upload.log in its
// directory (Server.LogPath). Stop and Start stop it and start it again on
// the same port; it is stopped when tb ends.
func StartUpload(tb testing.TB, u nginx.Upload) *nginx.Server {
	tb.Helper()
	for _, d := range []string{nginx.UploadIncoming, nginx.UploadOrigin, nginx.UploadTmp} {
		if err := os.MkdirAll(filepath.Join(u.Root, d), 0o755); err != nil {
			tb.Fatalf("nginxtest: %v", err)
		}
	}
	return start(tb, u)
}
