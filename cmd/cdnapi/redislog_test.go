package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi/internal/redistest"
)

// TestRedisOutageLog stops the rate limit's Redis under a serving process
// for a few seconds: its log stays JSON, with go-redis's own complaints (a
// failed dial each second) kept out of it, and says once that Redis went
// away and once that it came back.
func TestRedisOutageLog(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process and Redis")
	}
	srv := redistest.Start(t)
	db := migratedDB(t, "redislog.db")
	p := startChildren(t, 1, "--db", db, "--rate-limit", "10", "--rate-limit-redis", srv.URL)[0]

	count := func(substr string) int { return strings.Count(p.logs.String(), substr) }
	srv.Stop()
	eventually(t, "the outage logged", func() error {
		if count("Redis is unreachable") == 0 {
			return fmt.Errorf("no outage line yet")
		}
		return nil
	})
	time.Sleep(3 * time.Second) // go-redis retries its dial each second meanwhile
	srv.Restart()
	eventually(t, "the recovery logged", func() error {
		if count("Redis answers again") == 0 {
			return fmt.Errorf("no recovery line yet")
		}
		return nil
	})

	logs := p.logs.String()
	for line := range strings.Lines(logs) {
		if !json.Valid([]byte(line)) {
			t.Errorf("a log line is not JSON: %q", line)
		}
	}
	if n, m := count("Redis is unreachable"), count("Redis answers again"); n != 1 || m != 1 {
		t.Errorf("the outage was logged %d times and its end %d times, want once each:\n%s", n, m, logs)
	}
	if !strings.Contains(logs, `"msg":"starting"`) {
		t.Errorf("the log kept no trace of its start; too many lines?\n%s", logs)
	}
}
