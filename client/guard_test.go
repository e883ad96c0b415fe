package client_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/client"
	"github.com/cdnapi/cdnapi/internal/auth"
	"github.com/cdnapi/cdnapi/internal/httpapi"
	"github.com/cdnapi/cdnapi/internal/ratelimit"
	"github.com/cdnapi/cdnapi/internal/storetest"
)

// rateLimited puts the server's own rate limiter in front of the lists:
// rate requests a second per client, burst at once.
func rateLimited(rate, burst int) func(*httpapi.Config) {
	return func(cfg *httpapi.Config) {
		cfg.Guard = httpapi.NewGuard(httpapi.GuardConfig{
			Limiter: ratelimit.NewMemory(ratelimit.Policy{Rate: rate, Burst: burst})})
	}
}

// A walk faster than the server's rate limit gets 429s with Retry-After,
// waits, and goes on where it was, on both engines. The walk starts with an
// empty bucket that refills at one request a second, so that its pages
// meet 429s however fast the machine is.
func TestWalkThroughRateLimits(t *testing.T) {
	forEngine(t, func(t *testing.T, e engine) {
		s := startServer(t, e, rateLimited(1, 2))
		f := fill(t, s, 28, 0) // 4 pages of 7
		ctx := t.Context()
		drain := newClient(t, s, client.WithRetries(0, 0, 0))
		for i := 0; ; i++ {
			if _, err := drain.ListRegions(ctx); err != nil {
				checkError(t, err, 429, "rate_limit_error", cdnapi.CodeRateLimited)
				break
			} else if i == 10 {
				t.Fatal("no 429 after 10 requests at a burst of 2")
			}
		}
		s.answers()

		got := collect(t, newClient(t, s).Files(ctx, client.ListFilesParams{Limit: 7}))
		sameItems(t, got, f.files, sameFile)
		answers := s.answers()
		if answers[0] != 429 || countOf(answers, 200) != 4 {
			t.Errorf("answers %v: want a 429 first, and four 200s", answers)
		}
	})
}

// The 401 and 429 codes, which the guard gives, decode like the others.
func TestGuardErrorCodes(t *testing.T) {
	ctx := t.Context()

	t.Run("rate_limited", func(t *testing.T) {
		s := startServer(t, engines[0], rateLimited(1, 1))
		c := newClient(t, s, client.WithRetries(0, 0, 0))
		// The bucket refills in a second, which a loaded machine may spend
		// between two requests: they are sent until one meets a 429.
		var err error
		for i := 0; ; i++ {
			if _, err = c.ListRegions(ctx); err != nil || i == 20 {
				break
			}
		}
		checkError(t, err, 429, "rate_limit_error", cdnapi.CodeRateLimited)

		// With retries, a Retry-After past the deadline is not waited for:
		// the 429 comes back before the deadline. An attempt whose 429
		// did not come (a refilled bucket) or came late (a slow machine)
		// is tried again; a client that waits never passes.
		c = newClient(t, s)
		for i := 0; ; i++ {
			short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			_, err = c.ListRegions(short)
			late := short.Err() != nil
			cancel()
			if e, ok := errors.AsType[*client.Error](err); ok && e.StatusCode == 429 && !late {
				checkError(t, err, 429, "rate_limit_error", cdnapi.CodeRateLimited)
				break
			}
			if i == 20 {
				t.Fatalf("no 429 before a deadline of 500ms in 20 tries; the last: %v", err)
			}
		}
	})

	t.Run("authentication", func(t *testing.T) {
		var keys *auth.Verifier
		s := startServer(t, engines[0], func(cfg *httpapi.Config) {
			keys = auth.New(cfg.Store.(*stoppableStore).current().(auth.Source), auth.Config{})
			cfg.Guard = httpapi.NewGuard(httpapi.GuardConfig{Keys: keys})
		})
		fill(t, s, 10, 0)
		other := storetest.Files(30, "other", 3) // fill's files of "other"
		storetest.SortFiles(other)
		key, rec := auth.NewKey("other", cdnapi.ScopeRead, "client test", time.Now(), time.Time{})
		must(t, s.store.current().(cdnapi.KeyStore).CreateKey(ctx, rec))
		must(t, keys.Refresh(ctx))

		_, err := newClient(t, s, client.WithRetries(0, 0, 0)).ListFiles(ctx, client.ListFilesParams{})
		checkError(t, err, 401, "authentication_error", cdnapi.CodeAuthenticationRequired)
		_, err = newClient(t, s, client.WithAPIKey(key+"x")).ListFiles(ctx, client.ListFilesParams{})
		checkError(t, err, 401, "authentication_error", cdnapi.CodeAPIKeyInvalid)

		// The key lists its project's files.
		got := collect(t, newClient(t, s, client.WithAPIKey(key)).Files(ctx, client.ListFilesParams{Limit: 7}))
		for i := range other {
			other[i].Project = ""
		}
		sameItems(t, got, other, sameFile)
		if a := s.answers(); countOf(a, 401) != 2 || slices.Contains(a, 429) {
			t.Errorf("answers %v: want two 401s and no retry", a)
		}
	})
}

// checkError fails t unless err is an *Error of the status, type and code.
func checkError(t *testing.T, err error, status int, typ, code string) {
	t.Helper()
	e, ok := errors.AsType[*client.Error](err)
	if !ok {
		t.Fatalf("error %v, want a *client.Error", err)
	}
	if e.StatusCode != status || e.Type != typ || e.Code != code || e.Message == "" || !strings.HasPrefix(e.RequestID, "req_") {
		t.Errorf("error %+v, want %d %s %s with a message and a request ID", e, status, typ, code)
	}
}
