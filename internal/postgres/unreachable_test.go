package postgres

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/pgtest"
	"github.com/cdnapi/cdnapi/internal/storetest"
)

// hangBound is how long past its context's deadline a call may take before
// the test calls it hung. It is generous: this is a liveness check, not a
// timing assertion.
const hangBound = 10 * time.Second

// callsFail runs every method of s, all at once, each with a context that
// ends after timeout, and fails t if one succeeds or outlives its context by
// hangBound.
func callsFail(t *testing.T, s *Store, timeout time.Duration) {
	t.Helper()
	type result struct {
		name string
		err  error
	}
	calls := callEveryMethod(s)
	results := make(chan result, len(calls))
	for name, call := range calls {
		go func() {
			ctx, cancel := context.WithTimeout(t.Context(), timeout)
			defer cancel()
			results <- result{name, call(ctx)}
		}()
	}
	deadline := time.After(timeout + hangBound)
	for range calls {
		select {
		case r := <-results:
			if r.err == nil {
				t.Errorf("%s succeeded on an unreachable server", r.name)
			}
		case <-deadline:
			t.Fatalf("calls still running %v after their contexts ended", hangBound)
		}
	}
}

// A stopped server makes every call fail, and the same Store works again,
// without being reopened, once the server is back.
func TestServerStoppedAndRestarted(t *testing.T) {
	t.Parallel()
	c := pgtest.Start(t)
	s := openStore(t, c.NewDatabase(t), Options{})
	ctx := t.Context()
	if err := storetest.Writer(s).PutFiles(ctx, []cdnapi.File{file("fil_1", t0)}); err != nil {
		t.Fatal(err)
	}

	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	callsFail(t, s, 5*time.Second)

	if err := c.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("Ping after the restart: %v", err)
	}
	files, err := s.ListFiles(ctx, cdnapi.FileQuery{Project: "default", Limit: 10})
	if err != nil || len(files) != 1 {
		t.Fatalf("ListFiles after the restart = %v, %v; want the one file", files, err)
	}
}

// A server that accepts connections but never answers, like a host whose
// database hangs, holds no call past its context.
func TestServerSilent(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			defer conn.Close() // held open, never answered, until the test ends
		}
	}()
	dsn := fmt.Sprintf("postgres://cdnapi@%s/cdnapi?sslmode=disable", l.Addr())
	// A connect timeout longer than the calls' contexts, so that the
	// contexts are what must end them.
	s, err := Open(t.Context(), dsn, Options{ConnectTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	callsFail(t, s, 300*time.Millisecond)
}

// Nothing listens on the port: calls fail at once.
func TestServerAbsent(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	s, err := Open(t.Context(), "postgres://cdnapi@"+addr+"/cdnapi?sslmode=disable", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	callsFail(t, s, 5*time.Second)
}
