package httpapi

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"
)

// TestAdminProfileBounds checks that whoever reaches the admin address
// cannot hold the profiler as long as they like (issue 19): seconds are 1
// to MaxProfileSeconds, and one lasting profile runs at a time.
func TestAdminProfileBounds(t *testing.T) {
	e := newEnv(t, nil)
	srv := httptest.NewServer(NewAdmin(AdminConfig{Store: e.store}))
	t.Cleanup(srv.Close)
	get := func(path string) (int, http.Header) {
		t.Helper()
		res, err := e.client.Get(srv.URL + path)
		must(t, err)
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode, res.Header
	}
	for _, path := range []string{
		"/debug/pprof/profile?seconds=3600",
		"/debug/pprof/profile?seconds=" + strconv.Itoa(MaxProfileSeconds+1),
		"/debug/pprof/profile?seconds=0",
		"/debug/pprof/profile?seconds=x",
		"/debug/pprof/trace?seconds=600",
		"/debug/pprof/heap?seconds=600",
	} {
		start := time.Now()
		if status, _ := get(path); status != http.StatusBadRequest || time.Since(start) > 5*time.Second {
			t.Errorf("%s: %d after %v, want 400 at once", path, status, time.Since(start))
		}
	}
	// While a profile runs, another is refused.
	done := make(chan int)
	go func() {
		res, err := e.client.Get(srv.URL + "/debug/pprof/profile?seconds=2")
		if err != nil {
			done <- 0
			return
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		done <- res.StatusCode
	}()
	time.Sleep(500 * time.Millisecond)
	if status, h := get("/debug/pprof/trace?seconds=1"); status != http.StatusTooManyRequests || h.Get("Retry-After") == "" {
		t.Errorf("a trace during a profile: %d, Retry-After %q; want 429 with Retry-After", status, h.Get("Retry-After"))
	}
	if status := <-done; status != http.StatusOK {
		t.Errorf("the profile answered %d", status)
	}
	if status, _ := get("/debug/pprof/trace?seconds=1"); status != http.StatusOK {
		t.Errorf("a trace after the profile: %d", status)
	}
}
