package main

import (
	"bufio"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestStreamDoesNotHoldShutdown: an open status stream ends when serve
// drains, so shutdown does not wait out --shutdown-timeout for it, and
// without the document that says this process is draining.
func TestStreamDoesNotHoldShutdown(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "stream.db")
	s := startServe(t, nil, "--db", db, "--shutdown-timeout", "10s")
	res, err := http.Get(s.api + "/api/v1/status/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "data: ") {
	}
	// The data lines after the first, until the stream ends.
	ended := make(chan []string, 1)
	go func() {
		var events []string
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				events = append(events, data)
			}
		}
		ended <- events
	}()
	start := time.Now()
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	t.Logf("serve stopped %v after it was told to, with a stream open", took.Round(time.Millisecond))
	if took > 5*time.Second {
		t.Errorf("shutdown took %v with a stream open, want well under the 10s timeout", took)
	}
	select {
	case events := <-ended:
		// The draining document (API under_maintenance) describes this
		// process alone: a page that got it would show the API under
		// maintenance while the rest of the fleet serves.
		for _, data := range events {
			if strings.Contains(data, `{"name":"API","status":"under_maintenance"}`) {
				t.Errorf("the stream sent the draining document before it ended: %s", data)
			}
		}
	case <-time.After(time.Second):
		t.Error("the stream did not end")
	}
}
