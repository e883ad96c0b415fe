// Package nginx runs Debian's nginx on loopback, as an origin serving a
// directory, as a cdnapi edge (a proxy cache logging in the format of
// deploy/nginx/cdnapi-log.conf), or as the Upload Service (WebDAV PUT and
// DELETE authorized by cdnapi, deploy/nginx/upload.conf), each in a
// directory of its own: the
// configuration, pid file, error log, cache and temporary files all live
// there, and no default path of the nginx build (/etc/nginx, /var/lib/nginx,
// /var/log/nginx, /run) is read or written.
//
// New renders a server's configuration; Start runs it as a child of this
// process (tests, see internal/nginxtest), or Args gives the command line for
// a process supervisor of one's own (scripts/cdn).
package nginx

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Binary returns the path of the nginx program: nginx on PATH, else
// Debian's /usr/sbin/nginx, which is not on the PATH of users other than
// root.
func Binary() (string, error) {
	if p, err := exec.LookPath("nginx"); err == nil {
		return p, nil
	}
	const debian = "/usr/sbin/nginx"
	if fi, err := os.Stat(debian); err == nil && !fi.IsDir() {
		return debian, nil
	}
	return "", errors.New("nginx is not installed (apt-get install nginx)")
}

// LogFormatFile returns the absolute path of deploy/nginx/cdnapi-log.conf in
// the cdnapi checkout that holds the working directory: tests run in their
// package's directory, scripts at the root.
func LogFormatFile() (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "deploy", "nginx", "cdnapi-log.conf"), nil
}

// ModuleRoot returns the directory of cdnapi's go.mod, from the working
// directory up.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(b), "module github.com/cdnapi/cdnapi\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("nginx: no cdnapi checkout (go.mod) above the working directory")
		}
		dir = parent
	}
}
