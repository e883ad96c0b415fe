package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"modernc.org/sqlite"
)

// Writers wait for each other.
//
// SQLite lets one connection write at a time. Within a process, the
// Store's single writer connection queues the writes in Go; between
// processes (serve, an ingest, a follower, an operator's `status set`),
// the writer that finds the lock taken gets SQLITE_BUSY once its
// connection's busy_timeout has passed. An ingest holds the lock for as
// long as it reads (49 s for 500,000 assets), so a write here never gives
// up on a busy lock: it tries again, every writerPoll, for as long as its
// context allows. Once it has waited waitNoticeAfter, it says so, once,
// through the notice of its context (WithWaitNotice), naming the writer
// it waits for when that writer has said who it is.
//
// A transaction that has held the lock for advertiseAfter writes who it
// is (pid, command, since when) to the file beside the database named by
// holderPath, and removes it when it ends. A waiting process reads it; a
// file left by a process that died is recognised by its pid and ignored.

const (
	// writerPoll is the busy_timeout of the writer connection: how long
	// one try waits inside SQLite (which sleeps and retries within it)
	// before Go looks at the context and tries again.
	writerPoll = 100 * time.Millisecond
	// waitNoticeAfter is how long a write waits before it says so: a
	// follower's commits hold the lock for a fraction of this.
	waitNoticeAfter = time.Second
	// advertiseAfter is how long a transaction holds the lock before it
	// writes who it is beside the database.
	advertiseAfter = 500 * time.Millisecond
)

type waitNoticeKey struct{}

// WithWaitNotice returns a context whose writes, when they wait for
// another process's write to the same SQLite database, call notice with a
// line that says so ("waiting for another writer: …") once they have
// waited a second, and with a second line when they go on. A command line
// prints them on stderr; a server logs them. Without one, writes wait
// silently.
func WithWaitNotice(ctx context.Context, notice func(msg string)) context.Context {
	return context.WithValue(ctx, waitNoticeKey{}, notice)
}

func waitNotice(ctx context.Context) func(string) {
	if n, ok := ctx.Value(waitNoticeKey{}).(func(string)); ok && n != nil {
		return n
	}
	return func(string) {}
}

// isBusy reports whether err is SQLite's SQLITE_BUSY, or one of its
// extended codes (such as SQLITE_BUSY_SNAPSHOT): a lock was taken, and
// nothing was written.
func isBusy(err error) bool {
	var e *sqlite.Error
	return errors.As(err, &e) && e.Code()&0xff == 5
}

// waitWrite runs try, and again every writerPoll while it fails with
// SQLITE_BUSY, until it succeeds, fails otherwise, or ctx ends. try must
// write nothing when it fails with SQLITE_BUSY: a BEGIN IMMEDIATE, or a
// statement outside a transaction.
func (s *Store) waitWrite(ctx context.Context, try func() error) error {
	return waitWrite(ctx, s.path, try)
}

// waitWrite is Store.waitWrite on the database at path.
func waitWrite(ctx context.Context, path string, try func() error) error {
	var start time.Time
	noticed := false
	for {
		err := try()
		if err != nil && !start.IsZero() && ctx.Err() != nil {
			// The context ended during a try (the driver interrupts it).
			return gaveUp(path, start, ctx.Err())
		}
		if !isBusy(err) {
			if noticed && err == nil {
				waitNotice(ctx)(fmt.Sprintf("the other writer is done; writing after waiting %s", time.Since(start).Round(100*time.Millisecond)))
			}
			return err
		}
		if start.IsZero() {
			start = time.Now().Add(-writerPoll)
		}
		if !noticed && time.Since(start) >= waitNoticeAfter {
			noticed = true
			waitNotice(ctx)(waitingMessage(path))
		}
		// A busy snapshot fails at once, without SQLite's own wait.
		select {
		case <-ctx.Done():
			return gaveUp(path, start, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func gaveUp(path string, start time.Time, err error) error {
	return fmt.Errorf("gave up waiting %s for another writer to %s: %w",
		time.Since(start).Round(100*time.Millisecond), filepath.Base(path), err)
}

// exec runs a statement on the writer outside a transaction, waiting for
// other writers like inTx.
func (s *Store) exec(ctx context.Context, query string, args ...any) (res sql.Result, err error) {
	err = s.waitWrite(ctx, func() error {
		var err error
		res, err = s.write.ExecContext(ctx, query, args...)
		return err
	})
	return res, err
}

// holder is who holds the write lock, as the holder file says.
type holder struct {
	PID     int       `json:"pid"`
	Command string    `json:"command"`
	Since   time.Time `json:"since"`
}

// holderPath is the file beside the database in which a long writer says
// who it is.
func holderPath(db string) string { return db + "-writer" }

// waitingMessage is the line a waiting write says, naming the writer it
// waits for when that writer said who it is and is still running.
func waitingMessage(path string) string {
	db := filepath.Base(path)
	h, ok := readHolder(holderPath(path))
	if !ok {
		return fmt.Sprintf("waiting for another writer: another process is writing to %s; going on when it is done", db)
	}
	return fmt.Sprintf("waiting for another writer: %s (pid %d) started writing to %s %s ago; going on when it is done",
		h.Command, h.PID, db, time.Since(h.Since).Round(time.Second))
}

// readHolder reads the holder file at path. It reports false when there is
// none, it cannot be read, or its process has ended.
func readHolder(path string) (holder, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return holder{}, false
	}
	var h holder
	if json.Unmarshal(b, &h) != nil || h.PID <= 0 || h.Command == "" || h.Since.IsZero() {
		return holder{}, false
	}
	// Signal 0 checks that the process exists; EPERM means it does, as
	// another user's.
	if err := syscall.Kill(h.PID, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return holder{}, false
	}
	return h, true
}

// advertise starts the clock of a transaction that began at since: once
// it has held the lock for advertiseAfter, it writes the holder file. The
// function it returns, called when the transaction ends, stops the clock
// and removes the file if it was written.
func (s *Store) advertise(since time.Time) (done func()) {
	var mu sync.Mutex
	written, ended := false, false
	t := time.AfterFunc(advertiseAfter, func() {
		mu.Lock()
		defer mu.Unlock()
		if ended {
			return
		}
		written = writeHolder(holderPath(s.path), s.path, holder{PID: os.Getpid(), Command: command(), Since: since}) == nil
	})
	return func() {
		t.Stop()
		mu.Lock()
		defer mu.Unlock()
		ended = true
		if written {
			os.Remove(holderPath(s.path))
		}
	}
}

// writeHolder writes h to path, atomically, with the permissions of the
// database file db. It is a courtesy to waiting processes: a failure only
// makes them say less.
func writeHolder(path, db string, h holder) error {
	mode := os.FileMode(0o600)
	if fi, err := os.Stat(db); err == nil {
		mode = fi.Mode().Perm()
	}
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// command names this process for the holder file: its program and the
// words of its command line before the first flag, at most three, such as
// "cdnapi ingest assets". Flags are left out: they may hold a DSN.
func command() string {
	if len(os.Args) == 0 {
		return "a process"
	}
	words := []string{strings.TrimSuffix(filepath.Base(os.Args[0]), ".test")}
	for _, a := range os.Args[1:] {
		if a == "--" && len(words) == 1 {
			continue // a test binary run as cdnapi
		}
		if strings.HasPrefix(a, "-") || len(words) == 4 {
			break
		}
		words = append(words, a)
	}
	return strings.Join(words, " ")
}
