package main

import (
	"path/filepath"
	"strings"
	"sync"
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
// the load, and one a minute), a change set with
// the CLI shown within a second; after serve restarts on the same address,
// the browser resumes the stream with Last-Event-ID (the server sends
// nothing it already has, so the page fetches nothing) and the next change
// is pushed again. When the server stays away, the page falls back to
// polling and says it cannot reach the server.
func TestStatusStreamInBrowser(t *testing.T) {
	b := newBrowser(t)
	db := "sqlite:" + filepath.Join(t.TempDir(), "stream.db")
	s := startServe(t, nil, "--db", db)
	addr := strings.TrimPrefix(s.api, "http://")
	cli := func(args ...string) { mustRunCmd(t, "", append(args, "--db", db)...) }
	quiet := func(what string) {
		t.Helper()
		before := eval[int](t, b, statusFetches)
		time.Sleep(2500 * time.Millisecond) // the page would poll every second (--status-interval 100ms)
		if after := eval[int](t, b, statusFetches); after != before {
			t.Errorf("%s: the page fetched /status %d times while nothing changed", what, after-before)
		}
	}
	pushed := func(what, status, banner string) {
		t.Helper()
		start := time.Now()
		cli("status", "set", "Virus Scanning", status)
		took := b.waitText(t, ".banner", banner, 5*time.Second)
		t.Logf("%s: shown %v after `status set` returned (%v with the command)", what, took.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
		if took > time.Second {
			t.Errorf("%s: the change took %v to show, want under 1s", what, took)
		}
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
	b.do(t, "load /status", chromedp.Navigate(s.api+"/status"), chromedp.WaitVisible(chromedp.ID("main")))
	b.waitText(t, ".banner", "All systems operational", 5*time.Second)
	time.Sleep(2500 * time.Millisecond) // the one fetch 2s after the load, for the history
	quiet("after load")
	pushed("first change", "major_outage", "Major outage")
	b.check(t, "streaming")
	time.Sleep(2500 * time.Millisecond) // the fetch 2s after the event, for the history

	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	s = startServe(t, nil, "--db", db, "--api-addr", addr)
	quiet("after the restart")
	// The browser reconnected with the ID of the last event it had, which
	// names the statuses the restarted server has too: nothing was resent.
	var reqs []string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
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
	b.waitText(t, "#updated", "Cannot reach the server", 15*time.Second)
}
