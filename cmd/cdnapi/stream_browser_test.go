package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// statusFetches counts the page's own fetches of /status since it loaded:
// the refreshes, whether pushed or polled.
const statusFetches = `performance.getEntriesByType('resource').filter(function(e){return /\/status$/.test(e.name)}).length`

// TestStatusStreamInBrowser: /status in Chromium follows the status stream
// rather than polling: no fetch while nothing changes (but the one 2s after
// the load and after each event, and one a minute), and a change set with
// the CLI shown without a poll; after serve restarts on the same address,
// the browser resumes the stream with Last-Event-ID (the server sends
// nothing it already has, so the page fetches nothing) and the next change
// is pushed again. When the server stays away, the page falls back to
// polling and says it cannot reach the server.
//
// It holds on a loaded machine: the fetches the page is expected to make
// are waited for as events, never slept for, before a quiet window starts
// (a fixed 2.5 s sleep once let the fetch 2 s after the load fall into the
// window), and how soon a change shows is logged, not bounded: a push is
// proven by showing the change while the page does not poll.
func TestStatusStreamInBrowser(t *testing.T) {
	b := newBrowser(t)
	db := "sqlite:" + filepath.Join(t.TempDir(), "stream.db")
	s := startServe(t, nil, "--db", db)
	addr := strings.TrimPrefix(s.api, "http://")
	cli := func(args ...string) { mustRunCmd(t, "", append(args, "--db", db)...) }
	// fetched waits until the page has fetched /status at least n times
	// since it loaded, and returns the count.
	fetched := func(what string, n int) int {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			got := eval[int](t, b, statusFetches)
			if got >= n {
				return got
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the page fetched /status %d times in 60s, want %d", what, got, n)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// quiet checks that the page does not poll: polling (every second, with
	// --status-interval 100ms) would fetch twice or more in the window; one
	// fetch may be the page's once-a-minute refresh, which a slow run meets.
	quiet := func(what string) {
		t.Helper()
		// A status that really changes in the window (Storage's probe
		// slow on a loaded machine, and back) is an event the page
		// rightly fetches for, at once and 2s later: the window counts
		// the server's events too, from a stream of its own.
		changes := countStreamEvents(t, s.api)
		before := eval[int](t, b, statusFetches)
		time.Sleep(2500 * time.Millisecond) // the window itself: what must not happen in it
		n := eval[int](t, b, statusFetches) - before
		if c := changes(); n > 1+2*c {
			t.Errorf("%s: the page fetched /status %d times in 2.5s while the status changed %d times", what, n, c)
		}
	}
	// pushed sets a status and waits for the page to show it, then for the
	// two fetches the event makes (at once, and 2s later for the history).
	pushed := func(what, status, banner string) {
		t.Helper()
		before := eval[int](t, b, statusFetches)
		start := time.Now()
		cli("status", "set", "Virus Scanning", status)
		took := b.waitText(t, ".banner", banner, 30*time.Second)
		t.Logf("%s: shown %v after `status set` returned (%v with the command)", what, took.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
		fetched(what, before+2)
	}

	// The Last-Event-ID of every stream request the browser sends, "" for
	// none, in order. The headers as sent come in the ExtraInfo event,
	// which Chromium may send before or after the request's own event
	// (the DevTools protocol does not order them), so each request is
	// kept in the order its first event came, and read once it has both.
	var mu sync.Mutex
	var order []network.RequestID
	isStream := map[network.RequestID]bool{}
	lastID := map[network.RequestID]string{}
	seen := func(id network.RequestID) {
		if _, ok := isStream[id]; !ok {
			isStream[id] = false
			order = append(order, id)
		}
	}
	if _, err := chromedp.Call(b.ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Listen(b.ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			seen(e.RequestID)
			if strings.HasSuffix(e.Request.URL, "/api/v1/status/stream") {
				isStream[e.RequestID] = true
			}
		case *network.EventRequestWillBeSentExtraInfo:
			seen(e.RequestID)
			id := ""
			for k, v := range e.Headers {
				if strings.EqualFold(k, "Last-Event-ID") {
					id, _ = v.(string)
				}
			}
			lastID[e.RequestID] = id
		}
	}); err != nil {
		t.Fatal(err)
	}
	streamRequests := func() []string {
		mu.Lock()
		defer mu.Unlock()
		var ids []string
		for _, r := range order {
			if id, ok := lastID[r]; ok && isStream[r] {
				ids = append(ids, id)
			}
		}
		return ids
	}
	// This serve has no upload service nor scanner: both read
	// under_maintenance until an operator says otherwise, as here, so
	// that the page starts from "All systems operational".
	cli("status", "set", "Upload Service", "operational")
	cli("status", "set", "Virus Scanning", "operational")
	// The page loads once serve has published the statuses just set, so
	// that the stream's first event is the version the page shows and
	// makes no fetch: the fetches after the load are then exactly one.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var doc struct{ Status string }
		if res, err := http.Get(s.api + "/api/v1/status"); err == nil {
			json.NewDecoder(res.Body).Decode(&doc)
			res.Body.Close()
		}
		if doc.Status == "operational" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not publish the statuses set within 30s: %q", doc.Status)
		}
	}
	b.do(t, "load /status", chromedp.Navigate(s.api+"/status"), chromedp.WaitVisible(chromedp.ID("main")))
	b.waitText(t, ".banner", "All systems operational", 30*time.Second)
	fetched("after load", 1) // the one fetch 2s after the load, for the history
	quiet("after load")
	pushed("first change", "major_outage", "Major outage")
	b.check(t, "streaming")

	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	s = startServe(t, nil, "--db", db, "--api-addr", addr)
	quiet("after the restart")
	// The browser reconnected with the ID of the last event it had, which
	// names the statuses the restarted server has too: nothing was resent.
	var reqs []string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		reqs = streamRequests()
		if len(reqs) >= 2 && reqs[0] == "" && reqs[len(reqs)-1] != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stream requests with Last-Event-ID %q: want none first, then the last event's", reqs)
		}
	}
	t.Logf("stream requests' Last-Event-ID: %q", reqs)
	pushed("after the restart", "under_maintenance", "Under maintenance")

	// The server goes away for good: after five failed reconnects the
	// page polls, and tells the reader it cannot reach the server.
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	b.waitText(t, "#updated", "Cannot reach the server", 60*time.Second)
}

// countStreamEvents follows api's status stream from now on, and returns a
// function that stops it and says how many changes it sent after the
// document it starts with.
func countStreamEvents(t *testing.T, api string) func() int {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, api+"/api/v1/status/stream", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	var events atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "data:") {
				events.Add(1)
			}
		}
	}()
	return func() int {
		cancel()
		res.Body.Close()
		<-done
		return max(0, int(events.Load())-1)
	}
}
