package sqlite

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"unsafe"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/demo"
	"github.com/cdnapi/cdnapi/internal/storetest"
)

// pageCacheBytes returns SQLite's SQLITE_STATUS_PAGECACHE_OVERFLOW, the
// bytes of page cache it holds in this process (every page, since no
// SQLITE_CONFIG_PAGECACHE buffer is configured), now and at most since the
// last reset, which reset starts anew.
func pageCacheBytes(t *testing.T, reset bool) (now, most int64) {
	t.Helper()
	tls := libc.NewTLS()
	defer tls.Close()
	// SQLite writes the two figures into Go memory, which does not move.
	out := new([2]int64)
	var r int32
	if reset {
		r = 1
	}
	at := uintptr(unsafe.Pointer(out))
	if rc := sqlite3.Xsqlite3_status64(tls, sqlite3.SQLITE_STATUS_PAGECACHE_OVERFLOW, at, at+8, r); rc != sqlite3.SQLITE_OK {
		t.Fatalf("sqlite3_status64: %d", rc)
	}
	runtime.KeepAlive(out)
	return out[0], out[1]
}

// TestPageCacheBudget reads pages all over a list several times larger than
// the store's page caches, from every reader at once, as serve's deep pages
// do, and checks that the pages SQLite keeps stay within 8 MiB, the share of
// serve's peak RSS goal (64 MiB, issue 21) left to them. The readers share
// one budget with the writer (see DefaultWriterCacheKiB): with a writer
// cache of 16 MiB they held 13 to 15 MiB here, with 2 MiB, 5.
//
// It does not run in parallel: the figure is the whole process's.
func TestPageCacheBudget(t *testing.T) {
	const readers = 4
	seeded, path := openTemp(t, Options{})
	ctx := t.Context()
	// About 44 MB of files: their leaves alone are several budgets.
	opts := demo.SeedOptions{Project: "default", Files: 200_000, Seed: 1, Now: storetest.Epoch}
	if err := seeded.Write(ctx, func(w cdnapi.Writer) error { return demo.Seed(ctx, w, opts) }); err != nil {
		t.Fatal(err)
	}
	seeded.Close() // openTemp's cleanup closes it again, which does nothing
	// serve opens a file that exists, whose page size its connections
	// learn from the file: their caches then grew more than on the file
	// that seeded made.
	s, err := Open(ctx, path, Options{ReadConns: readers})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var positions []cdnapi.Position
	for after := (*cdnapi.Position)(nil); ; {
		page, err := s.ListFiles(ctx, cdnapi.FileQuery{Project: "default", After: after, Limit: cdnapi.MaxLimit})
		if err != nil {
			t.Fatal(err)
		}
		if len(page) < cdnapi.MaxLimit {
			break
		}
		p := page[len(page)-1].Position()
		positions, after = append(positions, p), &p
	}

	before, _ := pageCacheBytes(t, true)
	var wg sync.WaitGroup
	for g := range readers {
		r := rand.New(rand.NewPCG(uint64(g), 1))
		wg.Go(func() {
			for range 4_000 {
				p := positions[r.IntN(len(positions))]
				if _, err := s.ListFiles(ctx, cdnapi.FileQuery{Project: "default", After: &p, Limit: 20}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	_, most := pageCacheBytes(t, false)

	const want = 8 << 20
	grown := most - before
	if grown > want {
		t.Errorf("the page caches grew by %.1f MiB under reads, want at most %.1f MiB", float64(grown)/(1<<20), float64(want)/(1<<20))
	}
	t.Logf("the page caches grew by %.1f MiB; the connections' cache sizes add up to %d KiB",
		float64(grown)/(1<<20), readers*readerCacheKiB+DefaultWriterCacheKiB)
}
