package genclients

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
)

// calls is the transport of the generated clients in TestGeneratedClients:
// it notes the method and path of every request they send, so that the
// test can check that each client called every operation of the document.
// It also ends a Server-Sent Events body after its first event: both
// generators read a body whole, and the status stream never ends.
type calls struct {
	mu   sync.Mutex
	seen map[string]bool // "METHOD /path"
}

func newCalls() *calls { return &calls{seen: map[string]bool{}} }

// client returns an HTTP client that goes through c.
func (c *calls) client() *http.Client { return &http.Client{Transport: c} }

func (c *calls) RoundTrip(req *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.seen[req.Method+" "+req.URL.Path] = true
	c.mu.Unlock()
	res, err := http.DefaultTransport.RoundTrip(req)
	if err == nil && strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		res.Body = &firstEvent{r: bufio.NewReader(res.Body), c: res.Body}
	}
	return res, err
}

// firstEvent reads a stream up to the blank line that ends its first
// event with data (a "retry:" field or a comment may come before it).
type firstEvent struct {
	r       *bufio.Reader
	c       io.Closer
	buf     bytes.Buffer
	hasData bool // the block read so far has a data field
	done    bool
}

func (f *firstEvent) Read(p []byte) (int, error) {
	for !f.done && f.buf.Len() < len(p) {
		line, err := f.r.ReadString('\n')
		f.buf.WriteString(line)
		switch {
		case err != nil:
			f.done = true
		case strings.HasPrefix(line, "data:"):
			f.hasData = true
		case line == "\n" && f.hasData:
			f.done = true
		}
	}
	if f.buf.Len() == 0 {
		return 0, io.EOF
	}
	return f.buf.Read(p)
}

func (f *firstEvent) Close() error { return f.c.Close() }

// checkEveryOperation fails t for each operation of the document, as the
// server serves it, that the client named who never called.
func (c *calls) checkEveryOperation(t *testing.T, s *server, who string) {
	t.Helper()
	res, err := http.Get(s.api + "/api/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.NewDecoder(res.Body).Decode(&doc); err != nil || len(doc.Paths) == 0 {
		t.Fatalf("the document's paths: %v", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var missed []string
	for path, item := range doc.Paths {
		for method := range item {
			switch method {
			case "get", "head", "options", "post", "put", "patch", "delete":
				if op := strings.ToUpper(method) + " " + path; !c.seen[op] {
					missed = append(missed, op)
				}
			}
		}
	}
	if len(missed) > 0 {
		slices.Sort(missed)
		t.Errorf("the %s client never called %d operations of the document: %s", who, len(missed), strings.Join(missed, ", "))
	}
}
