package client_test

import (
	"errors"
	"net"
	"net/http"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/client"
	"github.com/cdnapi/cdnapi/internal/storetest"
)

func TestNewRefusesBadURLs(t *testing.T) {
	for _, tt := range []struct {
		api, edge string
		ok        bool
	}{
		{"http://127.0.0.1:8080", "http://127.0.0.1:8081", true},
		{"https://api.example.com/", "", true},
		{"", "", true},
		{"127.0.0.1:8080", "", false},
		{"ftp://example.com", "", false},
		{"http://example.com?x=1", "", false},
		{"", "http://", false},
	} {
		_, err := client.New(tt.api, tt.edge)
		if (err == nil) != tt.ok {
			t.Errorf("New(%q, %q): %v", tt.api, tt.edge, err)
		}
	}
	c, err := client.New("", "")
	must(t, err)
	if _, err := c.ListFiles(t.Context(), client.ListFilesParams{}); err == nil {
		t.Error("ListFiles without an API URL succeeded")
	}
	if _, err := c.ListRegions(t.Context()); err == nil {
		t.Error("ListRegions without an edge URL succeeded")
	}
}

// The options reach the wire: the key, the User-Agent and the HTTP client.
func TestOptionsReachTheServer(t *testing.T) {
	s := startServer(t, engines[0], nil)
	fill(t, s, 3, 0)
	ctx := t.Context()

	c := newClient(t, s)
	_, err := c.ListFiles(ctx, client.ListFilesParams{})
	must(t, err)
	h := s.lastHeader()
	if h.Get("User-Agent") != client.DefaultUserAgent || h.Get("Authorization") != "" || h.Get("Accept-Encoding") != "gzip" {
		t.Errorf("default request headers: %v", h)
	}

	plain := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	c = newClient(t, s, client.WithAPIKey("cdk_test"), client.WithUserAgent("probe/2"), client.WithHTTPClient(plain))
	_, err = c.ListFiles(ctx, client.ListFilesParams{})
	must(t, err)
	h = s.lastHeader()
	if h.Get("User-Agent") != "probe/2" || h.Get("Authorization") != "Bearer cdk_test" || h.Get("Accept-Encoding") != "" {
		t.Errorf("request headers with options: %v", h)
	}
}

// With the cache on, asking for a page again sends its ETag, and a 304
// returns the kept page, which callers cannot change by changing theirs.
func TestConditionalCache(t *testing.T) {
	s := startServer(t, engines[0], nil)
	f := fill(t, s, 20, 0)
	ctx := t.Context()
	c := newClient(t, s, client.WithCache(8))
	params := client.ListFilesParams{Limit: 5}

	first, err := c.ListFiles(ctx, params)
	must(t, err)
	first.Items[0].ID = "fil_changedByTheCaller"
	second, err := c.ListFiles(ctx, params)
	must(t, err)
	if got := s.answers(); !slices.Equal(got, []int{200, 304}) {
		t.Errorf("answers %v, want 200 then 304", got)
	}
	sameItems(t, second.Items, f.files[:5], sameFile)
	if second.NextCursor == "" || !second.HasMore {
		t.Errorf("cached page lost its cursor: %+v", second)
	}

	doc, err := c.Status(ctx)
	must(t, err)
	again, err := c.Status(ctx)
	must(t, err)
	if got := s.answers(); !slices.Equal(got, []int{200, 304}) || !slices.Equal(doc.Components, again.Components) {
		t.Errorf("status twice: answers %v, %+v then %+v", got, doc, again)
	}

	newer := f.files[0]
	newer.ID, newer.Project, newer.CreatedAt = "fil_zzzNewest", "default", newer.CreatedAt.Add(time.Hour)
	must(t, storetest.Writer(s.store.current()).PutFiles(ctx, []cdnapi.File{newer}))
	third, err := c.ListFiles(ctx, params)
	must(t, err)
	if got := s.answers(); !slices.Equal(got, []int{200}) || third.Items[0].ID != newer.ID {
		t.Errorf("after an insert: answers %v, first item %s", got, third.Items[0].ID)
	}
}

// Network errors are retried up to the maximum, then returned as the
// transport error they are, wrapped.
func TestNetworkErrorsAreRetried(t *testing.T) {
	// A listener that takes each connection and closes it unanswered: the
	// client sees the connection reset or closed under it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer l.Close()
	var accepted atomic.Int32
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			conn.Close()
		}
	}()
	c, err := client.New("http://"+l.Addr().String(), "", client.WithRetries(2, time.Millisecond, 5*time.Millisecond))
	must(t, err)
	_, err = c.ListFiles(t.Context(), client.ListFilesParams{})
	if err == nil {
		t.Fatal("no error")
	}
	if _, ok := errors.AsType[*client.Error](err); ok {
		t.Errorf("a transport error became an API error: %v", err)
	}
	if n := accepted.Load(); n != 3 {
		t.Errorf("%d attempts, want 1 and 2 retries", n)
	}

	// Nothing listens here any more: connection refused, wrapped.
	addr := l.Addr().String()
	l.Close()
	c, err = client.New("http://"+addr, "", client.WithRetries(1, time.Millisecond, time.Millisecond))
	must(t, err)
	_, err = c.ListFiles(t.Context(), client.ListFilesParams{})
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("got %v, want ECONNREFUSED wrapped", err)
	}
}
