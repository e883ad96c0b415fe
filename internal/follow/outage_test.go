package follow_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/pgtest"
	"github.com/cdnapi/cdnapi/internal/postgres"
	"github.com/cdnapi/cdnapi/internal/storetest"
)

// TestStoreOutage stops PostgreSQL while the follower reads a growing log:
// it keeps its place, says so in its log, and once the server is back
// every line is listed once.
func TestStoreOutage(t *testing.T) {
	cluster := pgtest.Start(t)
	ctx := context.Background()
	st, err := postgres.Open(ctx, cluster.NewDatabase(t), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := storetest.Writer(st).PutRegions(ctx, []cdnapi.Region{
		{Code: "FRA1", Name: "Frankfurt", Zone: "eu-central", Country: "DE", Status: cdnapi.StatusOperational},
	}); err != nil {
		t.Fatal(err)
	}
	e := newEdge(t, t.TempDir())
	var logs lockedBuffer
	cfg := fastConfig(e.path)
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	stop := run(t, st, cfg)
	e.log(100)
	waitFor(t, st, 100)

	if err := cluster.Stop(); err != nil {
		t.Fatal(err)
	}
	e.log(100)
	time.Sleep(time.Second) // the follower tries, fails and backs off
	if err := cluster.Restart(); err != nil {
		t.Fatal(err)
	}
	e.log(100)
	checkExactlyOnce(t, waitFor(t, st, 300), 300)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "the store does not answer") || !strings.Contains(logs.String(), "the store answers again") {
		t.Errorf("the follower's log does not tell of the outage:\n%s", logs.String())
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
