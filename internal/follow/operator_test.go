package follow_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/follow"
	"github.com/cdnapi/cdnapi/internal/sqlite"
	"github.com/cdnapi/cdnapi/internal/teststore"
)

// TestFollowerLetsOperatorsWrite: a follower catching up on a long log
// commits batch after batch, each soon after the last; an operator's write
// from another process (here another connection to the same SQLite file)
// still gets the write lock between two of them, long before the follower
// is done, instead of waiting for the whole backlog or failing.
func TestFollowerLetsOperatorsWrite(t *testing.T) {
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "follow.db")
	open := func() *sqlite.Store {
		st, err := sqlite.Open(t.Context(), dbPath, sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		if err := st.Migrate(t.Context()); err != nil {
			t.Fatal(err)
		}
		return st
	}
	st := open()
	if err := st.Write(t.Context(), func(w cdnapi.Writer) error {
		return w.PutRegions(t.Context(), []cdnapi.Region{
			{Code: "FRA1", Name: "Frankfurt", Zone: "eu-central", Country: "DE", Status: cdnapi.StatusOperational},
		})
	}); err != nil {
		t.Fatal(err)
	}
	e := newEdge(t, dir)
	const lines = 60_000
	e.log(lines)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	followed := make(chan error, 1)
	go func() {
		followed <- follow.Run(ctx, st, follow.Config{Path: e.path, StopAtEnd: true, BatchLines: 200})
	}()
	// Once the follower commits, it commits without a pause until the end.
	deadline := time.Now().Add(20 * time.Second)
	for {
		p, err := st.LogPosition(t.Context(), e.path)
		if err == nil && p.Lines > 0 {
			break
		}
		if !errors.Is(err, cdnapi.ErrNotFound) && err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the follower committed nothing in 20s")
		}
		time.Sleep(5 * time.Millisecond)
	}

	op := open()
	start := time.Now()
	opCtx, opCancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer opCancel()
	if err := op.SetComponentOverride(opCtx, cdnapi.ComponentOverride{Name: "API", Status: cdnapi.StatusMajorOutage}); err != nil {
		t.Fatalf("the operator's write: %v", err)
	}
	took := time.Since(start)
	p, err := op.LogPosition(t.Context(), e.path)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the operator's write took %s; the follower had committed %d of %d lines", took, p.Lines, lines)
	if p.Lines >= lines {
		t.Errorf("the operator's write waited %s, until the follower had committed all %d lines", took, lines)
	}
	if err := <-followed; err != nil {
		t.Fatal(err)
	}
}

// TestOnceAllRejected: a backfill of a log in nginx's combined format
// commits nothing and fails, saying why in one line; one good line among
// the bad ones makes it a backfill that worked.
func TestOnceAllRejected(t *testing.T) {
	st := newStore(t, teststore.Engines[0]) // SQLite
	e := newEdge(t, t.TempDir())
	e.write(`192.0.2.1 - - [25/Nov/2025:12:03:07 +0000] "GET /a HTTP/1.1" 200 5 "-" "curl/8"` + "\n" +
		`192.0.2.1 - - [25/Nov/2025:12:03:08 +0000] "GET /b HTTP/1.1" 200 5 "-" "curl/8"` + "\n")
	cfg := fastConfig(e.path)
	cfg.StopAtEnd = true
	err := follow.Run(t.Context(), st, cfg)
	if !errors.Is(err, follow.ErrAllRejected) || !strings.Contains(err.Error(), "all 2 lines") ||
		!strings.Contains(err.Error(), "combined") || !strings.Contains(err.Error(), "deploy/nginx/cdnapi-log.conf") ||
		strings.Contains(err.Error(), "\n") {
		t.Fatalf("Run = %v, want ErrAllRejected naming combined and the log_format", err)
	}
	e.log(1)
	if err := follow.Run(t.Context(), st, cfg); err != nil {
		t.Fatalf("Run with one good line of three = %v", err)
	}
}
