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
// drains, so shutdown does not wait out --shutdown-timeout for it.
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
	ended := make(chan struct{})
	go func() {
		for sc.Scan() {
		}
		close(ended)
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
	case <-ended:
	case <-time.After(time.Second):
		t.Error("the stream did not end")
	}
}
