package nginx

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The folders of an uploads root. nginx writes a PUT into UploadIncoming,
// cdnapi uploads promotes a scanned file from there into UploadOrigin, and
// UploadTmp holds the bodies nginx is still receiving: on the same file
// system as the other two, so that a finished body becomes its file by a
// rename, and no reader ever sees half a file.
const (
	UploadIncoming = "incoming"
	UploadOrigin   = "origin"
	UploadTmp      = "tmp"
)

// DefaultUploadMaxBytes is the largest body an Upload accepts when its
// MaxBytes is 0.
const DefaultUploadMaxBytes int64 = 100 << 20

// Upload is the Upload Service: nginx's WebDAV module taking PUT and DELETE
// under an uploads root, each request authorized by cdnapi through
// auth_request, as deploy/nginx/upload.conf does (TestUploadMatchesShipped).
//
// The authorizer's contract: for every PUT or DELETE, nginx asks
// GET /authorize on Auth with the client's Authorization header,
// X-Original-Method, X-Original-URI (the raw request URI) and X-Request-Id
// (req_ and nginx's $request_id, which the answer's error body should quote).
// cdnapi answers
//   - 204 with X-Cdnapi-Project: the key's project; the file is written to
//     Root/incoming/PROJECT/PATH (PUT) or removed from Root/origin/PROJECT/PATH
//     (DELETE). A project that is not ValidProject-shaped writes nowhere: 503.
//   - 401, 403 or 400 with X-Cdnapi-Status (the same code, as digits) and
//     X-Cdnapi-Error: the JSON error body, {"error":{...}} on one line, plain
//     (not percent-escaped: nginx cannot unescape), which nginx returns as it
//     is with the status; a 401 keeps the authorizer's WWW-Authenticate.
//
// Anything else, or no answer, is 503 upload_unavailable.
type Upload struct {
	Root     string // the uploads root, holding incoming, origin and tmp
	Auth     string // host:port of cdnapi's upload-auth listener
	MaxBytes int64  // the largest body (default DefaultUploadMaxBytes)
	// LogPath is the access log (default: upload.log in the server's
	// directory), one JSON object a line in the cdnapi_upload format.
	LogPath string
}

// httpBlock renders the upload server for a server in dir. Unlike Render, it
// wants Root to exist: the server is about to run.
func (u Upload) httpBlock(dir, addr string) (string, error) {
	root, err := filepath.Abs(u.Root)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("upload root %s is not a directory (%v)", root, err)
	}
	u.Root, u.LogPath = root, u.logPath(dir)
	return u.Render(addr)
}

// logPath is the upload server's access log in a server whose directory is
// dir.
func (u Upload) logPath(dir string) string {
	if u.LogPath == "" {
		return filepath.Join(dir, "upload.log")
	}
	p, err := filepath.Abs(u.LogPath)
	if err != nil {
		return u.LogPath
	}
	return p
}

// Render returns the upload server's configuration for nginx's http
// context, listening on listen (what nginx's listen directive takes: a port,
// or host:port). Root and LogPath must be absolute. deploy/nginx/upload.conf
// is Render's output for the values its README documents.
func (u Upload) Render(listen string) (string, error) {
	if listen == "" || strings.ContainsAny(listen, " ;{}\"'$\n") {
		return "", fmt.Errorf("upload listen %q: want a port or host:port", listen)
	}
	if host, port, err := net.SplitHostPort(u.Auth); err != nil || host == "" || port == "" {
		return "", fmt.Errorf("upload auth %q: want host:port of cdnapi's upload-auth listener", u.Auth)
	}
	if strings.ContainsAny(u.Auth, " ;{}\"'$\n") {
		return "", fmt.Errorf("upload auth %q: want host:port of cdnapi's upload-auth listener", u.Auth)
	}
	max := u.MaxBytes
	if max == 0 {
		max = DefaultUploadMaxBytes
	}
	if max < 0 {
		return "", fmt.Errorf("upload max bytes %d: want 0 (the default) or more", max)
	}
	if !filepath.IsAbs(u.Root) || !filepath.IsAbs(u.LogPath) {
		return "", fmt.Errorf("upload root %q and log %q: want absolute paths", u.Root, u.LogPath)
	}
	root := filepath.Clean(u.Root)
	// quoted returns root/name as one nginx string.
	quoted := func(name string) (string, error) { return quote(filepath.Join(root, name)) }
	incoming, err := quoted(UploadIncoming)
	if err != nil {
		return "", err
	}
	origin, err := quoted(UploadOrigin)
	if err != nil {
		return "", err
	}
	tmp, err := quoted(UploadTmp)
	if err != nil {
		return "", err
	}
	logPath, err := quote(u.LogPath)
	if err != nil {
		return "", err
	}
	under := func(q string) string { return strings.TrimSuffix(q, `"`) + `/$1"` }
	return strings.NewReplacer(
		"[[listen]]", listen,
		"[[auth]]", u.Auth,
		"[[max]]", strconv.FormatInt(max, 10),
		"[[incoming]]", under(incoming),
		"[[origin]]", under(origin),
		"[[tmp]]", tmp,
		"[[log]]", logPath,
	).Replace(uploadTemplate), nil
}
