package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRequestsNetHTTPAnswers sends the requests of issue 19 that net/http
// answers, or used to, before or instead of the handlers. OPTIONS * now
// gets the contract's 204 (an HTTP/2 preface, which used to reach the
// handlers, is TestHTTP2PrefaceNeverReachesHandlers's). The others net/http answers itself with no way to change it: their exact
// status is pinned here, as api/openapi.yaml and the README list them.
func TestRequestsNetHTTPAnswers(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "raw.db")
	s := startServe(t, nil, "--db", db, "--demo")
	for _, tc := range []struct {
		name, request string
		status        int
		contentType   string // a prefix; "" for no body
	}{
		{"OPTIONS *", "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", 204, ""},
		{"Transfer-Encoding gzip", "GET /api/v1/files HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501, "text/plain"},
		{"Expect other than 100-continue", "GET /api/v1/files HTTP/1.1\r\nHost: x\r\nExpect: foo\r\n\r\n", 417, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, base := range []string{s.api, s.edge} {
				conn, err := net.DialTimeout("tcp", strings.TrimPrefix(base, "http://"), 5*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				conn.SetDeadline(time.Now().Add(10 * time.Second))
				if _, err := conn.Write([]byte(tc.request)); err != nil {
					t.Fatal(err)
				}
				br := bufio.NewReader(conn)
				res, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if ct := res.Header.Get("Content-Type"); res.StatusCode != tc.status || !strings.HasPrefix(ct, tc.contentType) ||
					(tc.contentType == "") != (len(body) == 0) {
					t.Errorf("%s: %d, Content-Type %q, body %q; want %d, %q", base, res.StatusCode, ct, body, tc.status, tc.contentType)
				}
				if tc.status == 204 && (res.Header.Get("Allow") != "GET, HEAD, OPTIONS" || res.Header.Get("X-Request-Id") == "") {
					t.Errorf("%s: OPTIONS * headers %v", base, res.Header)
				}
			}
		})
	}
}
