package retention_test

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/retention"
	"github.com/cdnapi/cdnapi/internal/sqlite"
	"github.com/cdnapi/cdnapi/internal/storetest"
)

// lockedBuffer is a log a pruner writes while the test reads it.
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

// TestPrunerWaitsForALongWriter: while another connection to the SQLite
// file holds its write lock far longer than the busy timeout (a long
// `cdnapi ingest`), the pruner of serve neither fails nor logs an error: it
// waits, saying so at Info through serve's wait notice, and prunes once
// the lock is free.
func TestPrunerWaitsForALongWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "prune.db")
	open := func(busy time.Duration) *sqlite.Store {
		st, err := sqlite.Open(t.Context(), path, sqlite.Options{BusyTimeout: busy})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		if err := st.Migrate(t.Context()); err != nil {
			t.Fatal(err)
		}
		return st
	}
	serve := open(200 * time.Millisecond)
	regions := storetest.Regions()
	assets := storetest.Assets(500, storetest.RegionCodes(regions), 11)
	if err := storetest.Writer(serve).PutRegions(t.Context(), regions); err != nil {
		t.Fatal(err)
	}
	if err := storetest.Writer(serve).PutAssets(t.Context(), assets); err != nil {
		t.Fatal(err)
	}

	ingest := open(0)
	held, release, ingested := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		ingested <- ingest.Write(context.Background(), func(w cdnapi.Writer) error {
			close(held)
			<-release
			return w.PutRegions(context.Background(), regions)
		})
	}()
	<-held
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()

	var logs lockedBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	// As serve does: its writes that wait say so in its log.
	ctx := sqlite.WithWaitNotice(t.Context(), func(msg string) { logger.Info(msg) })
	p := retention.New(serve, retention.Config{Retention: time.Nanosecond, Logger: logger})
	pruned := make(chan int, 1)
	go func() { pruned <- p.RunOnce(ctx).Deleted }()

	time.Sleep(1500 * time.Millisecond) // well past the busy timeout
	select {
	case n := <-pruned:
		t.Fatalf("the pruner returned (%d deleted) while another writer held the lock; log:\n%s", n, logs.String())
	default:
	}
	close(release)
	if err := <-ingested; err != nil {
		t.Fatalf("the long writer: %v", err)
	}
	select {
	case n := <-pruned:
		if n != len(assets) {
			t.Errorf("pruned %d assets, want all %d", n, len(assets))
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the pruner still waits after the long writer committed")
	}
	log := logs.String()
	if strings.Contains(log, "level=ERROR") || strings.Contains(log, "level=WARN") || strings.Contains(log, "locked") {
		t.Errorf("the pruner's log has an error:\n%s", log)
	}
	if !strings.Contains(log, `level=INFO msg="waiting for another writer`) {
		t.Errorf("the pruner's log does not say it waited:\n%s", log)
	}
}
