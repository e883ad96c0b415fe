package logbuf

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// countingWriter records each write it is given.
type countingWriter struct {
	mu     sync.Mutex
	writes []string
	fail   error
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes = append(c.writes, string(p))
	return len(p), c.fail
}

func (c *countingWriter) all() (string, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.writes, ""), len(c.writes)
}

func TestBuffersUntilFull(t *testing.T) {
	out := &countingWriter{}
	w := New(out, 100, time.Hour)
	defer w.Close()
	for i := range 11 {
		fmt.Fprintf(w, "line %03d\n", i) // 9 bytes each: 11 lines fit
	}
	if _, n := out.all(); n != 0 {
		t.Fatalf("%d writes before the buffer was full", n)
	}
	fmt.Fprintf(w, "line %03d\n", 11)
	got, n := out.all()
	if n != 1 || got != expectLines(0, 10) {
		t.Fatalf("after overflowing: %d writes %q", n, got)
	}
}

func TestFlushesOnTimer(t *testing.T) {
	out := &countingWriter{}
	w := New(out, 1<<10, 20*time.Millisecond)
	defer w.Close()
	w.Write([]byte("a line\n"))
	deadline := time.Now().Add(5 * time.Second)
	for {
		if got, _ := out.all(); got == "a line\n" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the timer never flushed the line")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestCloseLosesNothing(t *testing.T) {
	// A real file, as serve's stderr may be, written from many goroutines.
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := New(f, 4<<10, time.Hour)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				fmt.Fprintf(w, "g%d line %04d %s\n", g, i, strings.Repeat("x", i%50))
			}
		})
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("after close\n")) // goes straight through
	data, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 8001 || lines[8000] != "after close" {
		t.Fatalf("%d lines, last %q", len(lines), lines[len(lines)-1])
	}
	seen := map[string]bool{}
	for _, l := range lines[:8000] {
		if !lineRE.MatchString(l) {
			t.Fatalf("torn line %q", l)
		}
		seen[l] = true
	}
	if len(seen) != 8000 {
		t.Fatalf("%d distinct lines, want 8000", len(seen))
	}
}

func TestLargeWriteGoesStraightThrough(t *testing.T) {
	out := &countingWriter{}
	w := New(out, 16, time.Hour)
	w.Write([]byte("short\n"))
	big := bytes.Repeat([]byte("y"), 40)
	w.Write(big)
	got, n := out.all()
	if n != 2 || got != "short\n"+string(big) {
		t.Fatalf("%d writes %q", n, got)
	}
	w.Close()
}

func TestReportsWriteErrors(t *testing.T) {
	out := &countingWriter{fail: errors.New("disk full")}
	w := New(out, 8, time.Hour)
	w.Write([]byte("12345678"))
	if _, err := w.Write([]byte("x")); err == nil {
		t.Error("the failed flush was not reported")
	}
	if err := w.Close(); err == nil {
		t.Error("Close did not report the failed flush")
	}
}

var lineRE = regexp.MustCompile(`^g\d line \d{4} x*$`)

// expectLines returns the lines "line 000\n" … for from to to inclusive.
func expectLines(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "line %03d\n", i)
	}
	return b.String()
}

// slowWriter is a countingWriter that takes a while over each write, as a
// file on a busy disk does, so that writes pile up during a flush.
type slowWriter struct{ countingWriter }

func (s *slowWriter) Write(p []byte) (int, error) {
	time.Sleep(time.Millisecond)
	return s.countingWriter.Write(p)
}

// Writers that go on while a full buffer is written out lose nothing, and
// each writer's lines come out in the order it wrote them.
func TestConcurrentWritesKeepOrder(t *testing.T) {
	out := &slowWriter{}
	w := New(out, 256, time.Millisecond)
	const writers, lines = 8, 500
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range lines {
				fmt.Fprintf(w, "w%d %04d\n", g, i)
			}
		})
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	all, _ := out.all()
	next := make([]int, writers)
	for _, line := range strings.Split(strings.TrimSuffix(all, "\n"), "\n") {
		var g, i int
		if _, err := fmt.Sscanf(line, "w%d %d", &g, &i); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if i != next[g] {
			t.Fatalf("writer %d: line %d after %d", g, i, next[g]-1)
		}
		next[g]++
	}
	for g, n := range next {
		if n != lines {
			t.Errorf("writer %d: %d lines out, want %d", g, n, lines)
		}
	}
}
