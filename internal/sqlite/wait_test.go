package sqlite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
)

// holdWriteLock begins a Write on st that holds SQLite's write lock until
// the returned release is called, as a long ingest does. It returns once
// the lock is held.
func holdWriteLock(t *testing.T, st *Store) (release func() error) {
	t.Helper()
	held, stop, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- st.Write(context.Background(), func(w cdnapi.Writer) error {
			close(held)
			<-stop
			return w.PutRegions(context.Background(), []cdnapi.Region{
				{Code: "LONG1", Name: "Long", Zone: "eu", Country: "DE", Status: cdnapi.StatusOperational},
			})
		})
	}()
	select {
	case <-held:
	case err := <-done:
		t.Fatalf("the long writer did not start: %v", err)
	}
	var once sync.Once
	var err error
	release = func() error {
		once.Do(func() { close(stop); err = <-done })
		return err
	}
	t.Cleanup(func() { release() })
	return release
}

// notices collects the lines of a WithWaitNotice.
type notices struct {
	mu    sync.Mutex
	lines []string
}

func (n *notices) add(msg string) { n.mu.Lock(); n.lines = append(n.lines, msg); n.mu.Unlock() }
func (n *notices) get() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.lines...)
}

// TestWriteWaitsForAnotherWriter: while another connection to the file
// holds the write lock for longer than the busy timeout (as `cdnapi
// ingest` does for the whole of its input), an operator's write waits,
// says once that it waits and for whom, and succeeds once the lock is
// free; it neither fails with SQLITE_BUSY nor writes before the other
// commits.
func TestWriteWaitsForAnotherWriter(t *testing.T) {
	long, path := openTemp(t, Options{})
	op, err := Open(t.Context(), path, Options{BusyTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	release := holdWriteLock(t, long)

	var n notices
	ctx := WithWaitNotice(t.Context(), n.add)
	writes := []struct {
		name  string
		write func() error
	}{
		{"status set", func() error {
			return op.SetComponentOverride(ctx, cdnapi.ComponentOverride{Name: "API", Status: cdnapi.StatusMajorOutage})
		}},
		{"regions set-status", func() error {
			return op.Write(ctx, func(w cdnapi.Writer) error {
				return w.PutRegions(ctx, []cdnapi.Region{{Code: "FRA1", Name: "Frankfurt", Zone: "eu", Country: "DE", Status: cdnapi.StatusOperational}})
			})
		}},
	}
	errs := make(chan error, len(writes))
	for _, w := range writes {
		go func() {
			if err := w.write(); err != nil {
				errs <- fmt.Errorf("%s: %w", w.name, err)
				return
			}
			errs <- nil
		}()
	}
	// Longer than the operator's busy timeout and the notice's delay.
	time.Sleep(1500 * time.Millisecond)
	select {
	case err := <-errs:
		t.Fatalf("a write returned while another held the lock: %v", err)
	default:
	}
	if err := release(); err != nil {
		t.Fatalf("the long writer: %v", err)
	}
	for range writes {
		select {
		case err := <-errs:
			if err != nil {
				t.Error(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a write still waits after the long writer committed")
		}
	}
	lines := n.get()
	want := fmt.Sprintf("waiting for another writer: sqlite (pid %d) started writing to cdnapi.db", os.Getpid())
	waiting := 0
	for _, l := range lines {
		if strings.HasPrefix(l, "waiting for another writer") {
			waiting++
			if !strings.HasPrefix(l, want) {
				t.Errorf("notice %q, want it to start %q", l, want)
			}
		}
	}
	if waiting != len(writes) {
		t.Errorf("notices %q: want one \"waiting for another writer\" per write (%d)", lines, len(writes))
	}
	if o, err := op.ComponentOverrides(t.Context()); err != nil || len(o) != 1 || o[0].Status != cdnapi.StatusMajorOutage {
		t.Errorf("overrides after the wait: %+v, %v", o, err)
	}
	if _, err := os.Stat(holderPath(path)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the holder file is left after the long writer committed: %v", err)
	}
}

// TestWriteWaitEndsWithItsContext: a write that waits gives up when its
// context ends, with the context's error and a message that says what it
// waited for, never SQLITE_BUSY.
func TestWriteWaitEndsWithItsContext(t *testing.T) {
	long, path := openTemp(t, Options{})
	op, err := Open(t.Context(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	holdWriteLock(t, long)
	ctx, cancel := context.WithTimeout(t.Context(), 400*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = op.SetComponentOverride(ctx, cdnapi.ComponentOverride{Name: "API", Status: cdnapi.StatusMajorOutage})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the context's deadline", err)
	}
	if msg := err.Error(); strings.Contains(msg, "SQLITE_BUSY") || strings.Contains(msg, "locked") || !strings.Contains(msg, "waiting") {
		t.Errorf("err = %q: want it to say it gave up waiting, without SQLITE_BUSY", msg)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("gave up after %s, want soon after the context's 400ms", took)
	}
}

// TestWaitingMessage: the holder file names the writer while its process
// runs; a file left by a process that has ended, or none, gives the plain
// line.
func TestWaitingMessage(t *testing.T) {
	path := t.TempDir() + "/cdnapi.db"
	plain := "waiting for another writer: another process is writing to cdnapi.db; going on when it is done"
	if got := waitingMessage(path); got != plain {
		t.Errorf("no holder file: %q, want %q", got, plain)
	}
	since := time.Now().Add(-12 * time.Second)
	if err := writeHolder(holderPath(path), path, holder{PID: os.Getpid(), Command: "cdnapi ingest assets", Since: since}); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("waiting for another writer: cdnapi ingest assets (pid %d) started writing to cdnapi.db 12s ago; going on when it is done", os.Getpid())
	if got := waitingMessage(path); got != want {
		t.Errorf("live holder: %q, want %q", got, want)
	}
	// A pid above the kernel's pid_max belongs to no process.
	if err := writeHolder(holderPath(path), path, holder{PID: 1 << 30, Command: "cdnapi ingest assets", Since: since}); err != nil {
		t.Fatal(err)
	}
	if got := waitingMessage(path); got != plain {
		t.Errorf("holder gone: %q, want %q", got, plain)
	}
}
