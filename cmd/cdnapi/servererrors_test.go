package main

import (
	"bufio"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServerErrorsBeforeHandlers pins the answers that net/http writes itself,
// before any handler runs, and which it offers no way to change: they are
// plain text, and the contract (api/openapi.yaml, "Errors") lists them as the
// exceptions to the JSON error body. Every request that does reach a handler
// gets the JSON body, %zz in the query included (see internal/httpapi).
func TestServerErrorsBeforeHandlers(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "errors.db")
	s := startServe(t, nil, "--db", db, "--demo")
	addr := strings.TrimPrefix(s.api, "http://")
	for _, tc := range []struct {
		name    string
		request string
		status  int
	}{
		{"escape that does not decode, in the path", "GET /api/v1/files%zz HTTP/1.1\r\nHost: x\r\n\r\n", 400},
		{"control character in the path", "GET /api/v1/\x01files HTTP/1.1\r\nHost: x\r\n\r\n", 400},
		{"malformed request line", "GET\r\nHost: x\r\n\r\n", 400},
		{"malformed header", "GET /api/v1/files HTTP/1.1\r\nHost: x\r\nNo colon\r\n\r\n", 400},
		{"no Host", "GET /api/v1/files HTTP/1.1\r\n\r\n", 400},
		{"header over 32 KiB", "GET /api/v1/files HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 40<<10) + "\r\n\r\n", 431},
		// The 4XX that the OpenAPI document's preflight documents.
		{"preflight, header over 32 KiB", "OPTIONS /api/v1/openapi.json HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 40<<10) + "\r\n\r\n", 431},
		{"unsupported HTTP version", "GET /api/v1/files HTTP/2.5\r\nHost: x\r\n\r\n", 505},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := conn.Write([]byte(tc.request)); err != nil {
				t.Fatal(err)
			}
			res, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != tc.status || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain") || !res.Close {
				t.Errorf("got %d, Content-Type %q, close %v; want %d, text/plain, Connection: close (documented as plain text)",
					res.StatusCode, res.Header.Get("Content-Type"), res.Close, tc.status)
			}
		})
	}
}
