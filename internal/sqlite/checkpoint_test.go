package sqlite

import (
	"context"
	"database/sql"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/storetest"
)

// Under constant reads, SQLite's own PASSIVE checkpoints never let the WAL
// start over, and its file only grows. The checkpointer empties a WAL that
// another process's commits grew past its limit, while the readers go on
// and the writes go on. The store's checkpointer is replaced by one with a
// limit of 2 MiB, so that the test writes little; the writes go through a
// second Store on the file, as another process's would, whose own
// checkpoints never begin.
func TestCheckpointUnderReads(t *testing.T) {
	const limit = 2 << 20
	s, other, walSize := storeAndOther(t, walCheckInterval, limit)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	readCtx, stopReads := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var readErr error
	var once sync.Once
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for readCtx.Err() == nil {
				_, err := s.ListFiles(readCtx, cdnapi.FileQuery{Project: "default", Limit: 20})
				if err != nil && readCtx.Err() == nil {
					once.Do(func() { readErr = err })
				}
			}
		}()
	}
	defer func() {
		stopReads()
		wg.Wait()
		if readErr != nil {
			t.Errorf("a read failed while the WAL was checkpointed: %v", readErr)
		}
	}()

	// Small transactions of files with long names, until the WAL is past
	// the limit, then slower ones while the checkpointer catches up.
	n := 0
	write := func() {
		t.Helper()
		putLongNames(t, ctx, other, n)
		n++
	}
	for walSize() <= limit {
		if ctx.Err() != nil {
			t.Fatalf("the WAL did not reach %d bytes: %d after %d transactions", limit, walSize(), n)
		}
		write()
	}
	grown := walSize()
	deadline := time.Now().Add(40 * walCheckInterval)
	for walSize() >= grown {
		if time.Now().After(deadline) {
			t.Fatalf("the WAL is still %d bytes %v after it passed %d (%d bytes)",
				walSize(), 40*walCheckInterval, limit, grown)
		}
		write()
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("the WAL grew to %d bytes in %d transactions and was emptied (now %d)", grown, n, walSize())
}

// A commit that leaves the WAL over the limit checkpoints before it
// returns, so back-to-back transactions cannot pile up in the WAL between
// two looks of the checkpointer: here the checkpointer never looks.
func TestCheckpointAfterCommit(t *testing.T) {
	const limit = 2 << 20
	s, path := openTemp(t, Options{})
	s.checkpoints.close()
	s.checkpoints = startCheckpointer(path, s.write, defaultBusyTimeout, time.Hour, limit)
	var largest int64
	for n := range 40 { // about 20 KiB of names a transaction: 8 MiB in all
		putLongNames(t, t.Context(), s, n)
		fi, err := os.Stat(path + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		largest = max(largest, fi.Size())
	}
	// A transaction here writes well under 1 MiB of pages.
	if largest > limit+1<<20 {
		t.Errorf("the WAL reached %d bytes after a commit, over the limit of %d and a transaction", largest, limit)
	}
	t.Logf("largest WAL after a commit: %d bytes", largest)
}

// storeAndOther opens a Store on a temporary file, whose checkpointer
// looks at the WAL every interval and empties it past limit bytes, and a
// second Store on the same file, as another process's would be, whose own
// checkpoints never begin. walSize reports the size of their WAL.
func storeAndOther(t *testing.T, interval time.Duration, limit int64) (s, other *Store, walSize func() int64) {
	t.Helper()
	s, path := openTemp(t, Options{})
	s.checkpoints.close()
	s.checkpoints = startCheckpointer(path, s.write, defaultBusyTimeout, interval, limit)
	other, err := Open(t.Context(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	other.checkpoints.close()
	other.checkpoints = startCheckpointer(path, other.write, defaultBusyTimeout, time.Hour, 1<<40)
	walSize = func() int64 {
		fi, err := os.Stat(path + "-wal")
		if err != nil {
			return 0
		}
		return fi.Size()
	}
	return s, other, walSize
}

// putLongNames writes, in one transaction, the n-th batch of 50 files whose
// names are 400 bytes longer than storetest's: a WAL grows fast on them.
func putLongNames(t *testing.T, ctx context.Context, s *Store, n int) {
	t.Helper()
	files := storetest.Files(50, "default", uint64(n))
	for i := range files {
		files[i].Filename = strings.Repeat("x", 400) + files[i].Filename
	}
	if err := storetest.Writer(s).PutFiles(ctx, files); err != nil {
		t.Fatalf("PutFiles: %v", err)
	}
}

// A transaction does not begin while the WAL is over the limit: its writer
// checkpoints first, and waits while a reader keeps the checkpoint from
// emptying the WAL, so that commits cannot pile up in it behind a
// checkpoint that fails. Here a read transaction holds frames of the WAL
// for a while; the write must begin after it ends, on an emptied WAL.
func TestCheckpointBeforeWrite(t *testing.T) {
	const limit = 2 << 20
	s, other, walSize := storeAndOther(t, time.Hour, limit)
	s.checkpoints.writerWait = time.Minute // longer than the reader below, however slow the machine
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for n := 0; walSize() <= limit; n++ { // another process's commits, never checkpointed
		putLongNames(t, ctx, other, n)
	}

	// A reader whose snapshot takes in the whole WAL: until it ends, no
	// checkpoint can start the WAL over.
	conn, err := s.read.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var files int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM files`).Scan(&files); err != nil {
		t.Fatal(err)
	}
	var ended atomic.Int64 // when the reader ended, in Unix nanoseconds
	go func() {
		time.Sleep(300 * time.Millisecond)
		ended.Store(time.Now().UnixNano())
		tx.Rollback()
	}()

	before := walSize()
	putLongNames(t, ctx, s, 1000)
	if ended.Load() == 0 {
		t.Fatalf("the write committed while a reader kept the WAL of %d bytes from being emptied", before)
	}
	if after := walSize(); after >= limit {
		t.Errorf("the WAL is %d bytes after the write, over the limit of %d: it was not emptied before it", after, limit)
	}
}
