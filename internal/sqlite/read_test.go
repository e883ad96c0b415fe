package sqlite

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/storetest"
)

// TestReadSlots checks the read slots that let a page run without watching
// its context: a list waits for a slot only while its context lasts, a
// failed query gives its slot back, and pages beyond the slots queue
// rather than fail.
func TestReadSlots(t *testing.T) {
	const conns = 2
	s, _ := openTemp(t, Options{ReadConns: conns})
	if err := storetest.Writer(s).PutFiles(t.Context(), storetest.Files(50, "default", 5)); err != nil {
		t.Fatal(err)
	}
	list := func(ctx context.Context) error {
		_, err := s.ListFiles(ctx, cdnapi.FileQuery{Project: "default", Limit: 20})
		return err
	}

	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	if err := list(cancelled); !errors.Is(err, context.Canceled) {
		t.Errorf("ListFiles with a cancelled context = %v, want context.Canceled", err)
	}

	for range conns + 1 { // more failures than slots
		if _, err := s.query(t.Context(), `SELECT * FROM no_such_table`); err == nil {
			t.Fatal("a query of a missing table succeeded")
		}
	}
	if err := list(t.Context()); err != nil {
		t.Fatalf("ListFiles after failed queries: %v", err)
	}

	// Hold every slot with open rows, as slow readers would.
	var held []*readRows
	for range conns {
		rows, err := s.query(t.Context(), listFilesFirst, "default", 20)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, rows)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if err := list(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("ListFiles while every slot is held = %v, want context.DeadlineExceeded", err)
	}
	done := make(chan error, 1)
	go func() { done <- list(t.Context()) }()
	select {
	case err := <-done:
		t.Fatalf("ListFiles returned while every slot is held: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	held[0].Close()
	if err := <-done; err != nil {
		t.Errorf("ListFiles once a slot is free: %v", err)
	}
	held[1].Close()
	held[1].Close() // a second Close gives back nothing more
	if n := len(s.slots); n != 0 {
		t.Errorf("%d slots taken after every query ended, want 0", n)
	}
}
