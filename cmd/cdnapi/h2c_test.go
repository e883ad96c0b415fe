package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi/internal/apitest"
)

// h2cClient speaks only HTTP/2 without TLS, with prior knowledge: it sends
// the HTTP/2 preface at once, as a load balancer configured for h2c does.
func h2cClient(t *testing.T) *http.Client {
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Protocols: &p}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// TestH2C checks that serve speaks HTTP/2 with prior knowledge on the API
// and edge addresses by default, answering as the contract says, and still
// HTTP/1.1 on the same ports.
func TestH2C(t *testing.T) {
	s := startServe(t, nil, "--db", "sqlite:"+filepath.Join(t.TempDir(), "h2c.db"))
	v := apitest.NewValidator(t)
	h2 := h2cClient(t)
	for _, url := range []string{
		s.api + "/api/v1/files?limit=5", s.api + "/api/v1/status", s.api + "/api/v1/openapi.json",
		s.edge + "/api/v1/regions", s.edge + "/api/v1/assets", s.edge + "/api/v1/files",
	} {
		for _, accept := range []string{"", "gzip", "zstd"} {
			req, err := http.NewRequest(http.MethodGet, url, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Accept-Encoding", accept)
			res, err := h2.Do(req)
			if err != nil {
				t.Fatalf("h2c GET %s: %v", url, err)
			}
			body, err := io.ReadAll(res.Body)
			res.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if res.ProtoMajor != 2 {
				t.Errorf("GET %s: %s, want HTTP/2.0", url, res.Proto)
			}
			v.Check(t, req, res, body)
		}
		res, _ := get(t, v, url)
		if res.ProtoMajor != 1 {
			t.Errorf("GET %s by HTTP/1.1: %s", url, res.Proto)
		}
	}
}

// TestHTTP2PrefaceNeverReachesHandlers checks that an HTTP/2 preface that
// net/http hands to the handler, on a server without h2c or after a first
// HTTP/1.1 request on a connection, is refused with 505 like any protocol
// version net/http does not speak, and never reaches the API: no request is
// counted, and the connection is closed.
func TestHTTP2PrefaceNeverReachesHandlers(t *testing.T) {
	const preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
	for _, tc := range []struct {
		name  string
		args  []string
		first string // an HTTP/1.1 request sent before the preface, if any
	}{
		{"without h2c", []string{"--h2c=false"}, ""},
		{"without h2c, after a request", []string{"--h2c=false"}, "GET /api/v1/status HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"with h2c, after a request", nil, "GET /api/v1/status HTTP/1.1\r\nHost: x\r\n\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startServe(t, nil, append([]string{"--db", "sqlite:" + filepath.Join(t.TempDir(), "h2c.db")}, tc.args...)...)
			conn, err := net.Dial("tcp", strings.TrimPrefix(s.api, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(10 * time.Second))
			r := bufio.NewReader(conn)
			if tc.first != "" {
				io.WriteString(conn, tc.first)
				res, err := http.ReadResponse(r, nil)
				if err != nil || res.StatusCode != http.StatusOK {
					t.Fatalf("the first request: %v %v", res, err)
				}
				io.Copy(io.Discard, res.Body)
			}
			before := requestsCounted(t, s)
			io.WriteString(conn, preface)
			res, err := http.ReadResponse(r, nil)
			if err != nil {
				t.Fatalf("the preface got no HTTP/1.1 answer: %v", err)
			}
			body, _ := io.ReadAll(res.Body)
			if res.StatusCode != http.StatusHTTPVersionNotSupported || !res.Close || res.Header.Get("X-Request-Id") != "" {
				t.Errorf("the preface got %d (close %v, X-Request-Id %q) %q, want net/http's plain 505",
					res.StatusCode, res.Close, res.Header.Get("X-Request-Id"), body)
			}
			if _, err := r.ReadByte(); err == nil {
				t.Errorf("the connection stays open after the 505")
			}
			if after := requestsCounted(t, s); after != before {
				t.Errorf("the API counted %d requests more: the preface reached the handlers", after-before)
			}
			if _, err := h2cClient(t).Get(s.api + "/api/v1/status"); (err == nil) == (tc.args != nil) {
				t.Errorf("an h2c client with --h2c=%v: err %v", tc.args == nil, err)
			}
		})
	}
}

// requestsCounted returns the API listener's cdnapi_http_requests_total,
// summed over routes and codes, from the admin address.
func requestsCounted(t *testing.T, s *server) int {
	t.Helper()
	res, err := http.Get(s.admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	total := 0
	lines := bufio.NewScanner(res.Body)
	for lines.Scan() {
		line := lines.Text()
		if !strings.HasPrefix(line, "cdnapi_http_requests_total{") || !strings.Contains(line, `listener="api"`) {
			continue
		}
		n, err := strconv.Atoi(line[strings.LastIndexByte(line, ' ')+1:])
		if err != nil {
			t.Fatalf("metrics line %q", line)
		}
		total += n
	}
	return total
}
