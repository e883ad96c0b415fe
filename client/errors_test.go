package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/client"
)

// Every error code of the contract that the server can give without
// authentication and rate limits reaches the caller as an *Error with the
// fields of the body, and only 429 and 503 are retried.
func TestErrorCodes(t *testing.T) {
	s := startServer(t, engines[0], nil)
	fill(t, s, 30, 30)
	c := newClient(t, s, client.WithRetries(0, 0, 0))
	swapped, err := client.New(s.edge, s.api)
	must(t, err)
	ctx := t.Context()
	page, err := c.ListAssets(ctx, client.ListAssetsParams{Limit: 5})
	must(t, err)
	assetCursor := page.NextCursor
	s.answers()

	tests := []struct {
		name       string
		call       func() error
		status     int
		typ, code  string
		param      string
		setUp, end func()
	}{
		{"limit too large", func() error { _, err := c.ListFiles(ctx, client.ListFilesParams{Limit: 101}); return err },
			400, "invalid_request_error", cdnapi.CodeParameterInvalid, "limit", nil, nil},
		{"malformed region", func() error { _, err := c.ListAssets(ctx, client.ListAssetsParams{Region: "fra1"}); return err },
			400, "invalid_request_error", cdnapi.CodeParameterInvalid, "region", nil, nil},
		{"unknown parameter", func() error {
			_, err := client.GetFiles(ctx, c, s.api+"/api/v1/files?page=2")
			return err
		}, 400, "invalid_request_error", cdnapi.CodeParameterUnknown, "page", nil, nil},
		{"garbled cursor", func() error { _, err := c.ListFiles(ctx, client.ListFilesParams{Cursor: "nope"}); return err },
			400, "invalid_request_error", cdnapi.CodeCursorInvalid, "cursor", nil, nil},
		{"cursor of another list", func() error {
			_, err := c.ListFiles(ctx, client.ListFilesParams{Cursor: assetCursor})
			return err
		}, 400, "invalid_request_error", cdnapi.CodeCursorInvalid, "cursor", nil, nil},
		{"unknown region", func() error { _, err := c.ListAssets(ctx, client.ListAssetsParams{Region: "ZZZ9"}); return err },
			400, "invalid_request_error", cdnapi.CodeRegionUnknown, "region", nil, nil},
		{"wrong address", func() error { _, err := swapped.ListFiles(ctx, client.ListFilesParams{}); return err },
			404, "invalid_request_error", cdnapi.CodeNotFound, "", nil, nil},
		{"store down", func() error { _, err := c.ListFiles(ctx, client.ListFilesParams{}); return err },
			503, "api_error", cdnapi.CodeStorageUnavailable, "", func() { s.store.stop(t) }, func() { s.store.start(t) }},
		{"server bug", func() error { _, err := c.ListFiles(ctx, client.ListFilesParams{}); return err },
			500, "api_error", cdnapi.CodeInternal, "", func() { s.store.panics.Store(true) }, func() { s.store.panics.Store(false) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.setUp != nil {
				tt.setUp()
				defer tt.end()
			}
			err := tt.call()
			e, ok := errors.AsType[*client.Error](err)
			if !ok {
				t.Fatalf("error %v (%T), want a *client.Error", err, err)
			}
			if e.StatusCode != tt.status || e.Type != tt.typ || e.Code != tt.code || e.Param != tt.param {
				t.Errorf("error %+v, want %d %s %s param %q", e, tt.status, tt.typ, tt.code, tt.param)
			}
			if e.Message == "" || !strings.HasPrefix(e.RequestID, "req_") {
				t.Errorf("error %+v: want a message and a request ID", e)
			}
			if msg := err.Error(); !strings.Contains(msg, e.Message) || !strings.Contains(msg, e.RequestID) {
				t.Errorf("Error() = %q: want the message and the request ID", msg)
			}
			if got := s.answers(); len(got) != 1 || got[0] != tt.status {
				t.Errorf("answers %v, want one %d: no retry", got, tt.status)
			}
		})
	}

	// No GET is answered 405, so the client never meets one; its body
	// still decodes like the others.
	res, err := http.Post(s.api+"/api/v1/files", "application/json", nil)
	must(t, err)
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	must(t, err)
	if e := client.ErrorOf(res, body); e.StatusCode != 405 || e.Code != cdnapi.CodeMethodNotAllowed || e.RequestID != res.Header.Get("X-Request-Id") {
		t.Errorf("405 decoded as %+v", e)
	}
}

// An answer that is not the contract's error body, such as a proxy's,
// still becomes an *Error with its status and request ID.
func TestErrorWithoutBody(t *testing.T) {
	res := &http.Response{StatusCode: 502, Header: http.Header{"X-Request-Id": {"lb-7"}}}
	e := client.ErrorOf(res, []byte("<html>Bad Gateway</html>"))
	if e.StatusCode != 502 || e.Code != "" || e.Message != "Bad Gateway" || e.RequestID != "lb-7" {
		t.Errorf("got %+v", e)
	}
}

// A closed store makes the server answer 503 with Retry-After: 5. A walk
// waits that long, retries, and goes on where it was, on both engines.
func TestWalkAcrossAnOutage(t *testing.T) {
	forEngine(t, func(t *testing.T, e engine) {
		s := startServer(t, e, nil)
		f := fill(t, s, 200, 0)
		c := newClient(t, s)
		var got []cdnapi.File
		restarted := make(chan struct{})
		for file, err := range c.Files(t.Context(), client.ListFilesParams{Limit: 7}) {
			must(t, err)
			got = append(got, file)
			if len(got) == 50 {
				s.store.stop(t)
				time.AfterFunc(300*time.Millisecond, func() { s.store.start(t); close(restarted) })
			}
		}
		<-restarted
		sameItems(t, got, f.files, sameFile)
		answers := s.answers()
		if n := countOf(answers, 503); n != 1 || len(answers) != (200+6)/7+1 {
			t.Errorf("answers %v: want one 503 among %d 200s", answers, (200+6)/7)
		}
	})
}

// A Retry-After that ends past the context's deadline is not waited for:
// the 503 is returned at once.
func TestRetryAfterPastTheDeadline(t *testing.T) {
	s := startServer(t, engines[0], nil)
	c := newClient(t, s)
	s.store.stop(t)
	defer s.store.start(t)
	// The server says 5s. The deadline is as far as it can be short of
	// that, so that a loaded machine's slow answer still comes before it.
	ctx, cancel := context.WithTimeout(context.Background(), 4500*time.Millisecond)
	defer cancel()
	_, err := c.ListFiles(ctx, client.ListFilesParams{})
	if e, ok := errors.AsType[*client.Error](err); !ok || e.Code != cdnapi.CodeStorageUnavailable {
		t.Fatalf("got %v, want storage_unavailable", err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Error("the client waited until the deadline")
	}
	if got := s.answers(); len(got) != 1 {
		t.Errorf("answers %v, want one 503", got)
	}

	// Cancelled while it waits, the call ends with both errors. It is
	// cancelled as the wait begins (the retry notice), not after a time,
	// which a loaded machine could spend before the 503 even came.
	ctx, cancel = context.WithCancel(context.Background())
	c = newClient(t, s, client.WithRetryNotice(func(client.Retry) { cancel() }))
	_, err = c.ListFiles(ctx, client.ListFilesParams{})
	if _, ok := errors.AsType[*client.Error](err); !ok || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled during the wait: %v", err)
	}
}

func countOf(statuses []int, status int) int {
	n := 0
	for _, s := range statuses {
		if s == status {
			n++
		}
	}
	return n
}
