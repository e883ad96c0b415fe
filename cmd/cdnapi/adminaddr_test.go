package main

import (
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAdminAddrWarning: serve warns at start when the admin listener, which
// shows metrics and profiles, is bound to an address other than loopback,
// and says nothing on loopback.
func TestAdminAddrWarning(t *testing.T) {
	for _, tc := range []struct {
		addr string
		warn bool
	}{{"127.0.0.1:0", false}, {"[::1]:0", false}, {"0.0.0.0:0", true}, {":0", true}} {
		t.Run(tc.addr, func(t *testing.T) {
			var logs syncBuffer
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			db := "sqlite:" + filepath.Join(t.TempDir(), "admin.db")
			go func() {
				done <- run(ctx, []string{"serve", "--db", db, "--api-addr", "127.0.0.1:0", "--edge-addr", "127.0.0.1:0",
					"--admin-addr", tc.addr}, getenvFrom(nil), strings.NewReader(""), io.Discard, &logs)
			}()
			deadline := time.Now().Add(20 * time.Second)
			for strings.Count(logs.String(), `"msg":"listening"`) < 3 {
				if time.Now().After(deadline) {
					cancel()
					t.Fatalf("serve did not come up within 20s: %v\n%s", <-done, logs.String())
				}
				time.Sleep(10 * time.Millisecond)
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("serve: %v", err)
			}
			var warned []string
			for line := range strings.SplitSeq(logs.String(), "\n") {
				var l struct{ Level, Msg, Addr string }
				if json.Unmarshal([]byte(line), &l) == nil && l.Level == "WARN" && strings.Contains(l.Msg, "admin listener") {
					warned = append(warned, line)
				}
			}
			if tc.warn && len(warned) != 1 {
				t.Errorf("--admin-addr %s: warnings %q; want one that the admin listener is not on loopback\n%s", tc.addr, warned, logs.String())
			}
			if !tc.warn && len(warned) != 0 {
				t.Errorf("--admin-addr %s: warnings %q; want none", tc.addr, warned)
			}
		})
	}
}
