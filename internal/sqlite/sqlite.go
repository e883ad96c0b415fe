// Package sqlite is the cdnapi.Store on an embedded SQLite database, through
// the cgo-free driver modernc.org/sqlite.
//
// A Store holds two connection pools on one database file: a pool of
// read-only connections that serve the lists, and a single writer. SQLite
// allows one writer at a time anyway; funnelling every write through one
// connection that begins its transactions IMMEDIATE means writers queue in
// Go instead of failing with SQLITE_BUSY, and in WAL mode the readers never
// wait for them.
//
// The schema is versioned with goose; the migrations are embedded in the
// binary. Open does not migrate: call Migrate before serving.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cdnapi/cdnapi"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// Options tunes a Store. The zero value is a sane default.
type Options struct {
	// ReadConns is the size of the read pool. Zero means the number of CPUs,
	// but at least 4.
	ReadConns int
	// BusyTimeout is how long a reader waits for a lock held by another
	// connection or process before it fails. Zero means 5 seconds. Writes
	// do not give up on a lock: they wait as long as their context allows
	// (see wait.go).
	BusyTimeout time.Duration
	// WriterCacheKiB is the most page cache the writer connection keeps,
	// in KiB. Zero means DefaultWriterCacheKiB; a process that writes in
	// bulk (ingest, seed, follow, origin sync) asks for BulkWriterCacheKiB.
	WriterCacheKiB int
}

const (
	defaultMinReadConns = 4
	defaultBusyTimeout  = 5 * time.Second

	// BulkWriterCacheKiB is the writer's page cache for a bulk writer. A
	// bulk ingest upserts into the unique index on asset IDs, which are
	// random, so it touches that index all over; with a cache that holds
	// it, a transaction of half a million rows dirties each page once
	// instead of spilling and rewriting it. On a table of three million
	// assets, BenchmarkWriteAssets/random wrote 57,000 rows/s with 64 MiB
	// and 93,000 with 256 MiB; at one million, where 64 MiB nearly holds
	// the index, the two were level (about 100,000).
	BulkWriterCacheKiB = 256 << 10
	// DefaultWriterCacheKiB is the writer's page cache for everything
	// else, serve above all.
	//
	// It is not the writer's alone. modernc builds SQLite with
	// SQLITE_ENABLE_MEMORY_MANAGEMENT, under which the page caches of all
	// the connections of a process are one LRU (pcache1's "mode 2"): each
	// connection's cache_size adds to a budget that any of them may fill.
	// At 16 MiB here, serve's four readers, whose own 1 MiB each adds up
	// to 4, grew into the writer's share under deep pages: 16 to 20 MiB
	// of pages (SQLITE_STATUS_PAGECACHE_OVERFLOW), each an allocation of
	// its own of about 20 KiB of RSS. At 2 MiB the same reads hold 5 MiB
	// (TestPageCacheBudget), and serve's peak RSS under scripts/bench-http
	// fell from 57 to 45 MiB.
	//
	// What that costs: random deep pages of a million files read a leaf
	// that the smaller cache holds less often, and took 4.5% more CPU per
	// answer (133 against 127 µs, six interleaved runs of wrk); a batch
	// of the pruner's 1,000 deletes of random-id assets, which dirties a
	// page of the ID index each, spills to the WAL before its commit, and
	// took 60 ms against 54 (means of two runs of 300 batches). Before
	// 16 MiB, the bulk size took serve from 40 to 348 MiB of RSS for good
	// while its pruner deleted a million expired assets.
	DefaultWriterCacheKiB = 2 << 10
	// pageSize is the page size of a database file this store creates; a
	// file that exists keeps its own, since WAL mode cannot change it. With
	// 16 KiB pages instead of SQLite's 4 KiB, the b-trees are shallower and
	// split a quarter as often, and a commit writes a quarter as many WAL
	// frames: `cdnapi ingest` wrote a million assets about 15% faster.
	pageSize = 16 << 10
	// readerCacheKiB is the page cache of each reader: its share of the
	// process's budget (see DefaultWriterCacheKiB). The cache holds the
	// upper levels of the b-trees, which every list reads; the leaves of a
	// deep page are read once, and the kernel's page cache keeps the file
	// anyway. With files stored in list order (migration 00007), the upper
	// levels of a million files are about 40 pages; 1 MiB holds them. The
	// larger sizes measured before (2 and 8 MiB, a third of serve's peak
	// RSS at 8) gained no speed.
	readerCacheKiB = 1 << 10
)

// Store is a cdnapi.Store on a SQLite database file. It is safe for
// concurrent use, also by several processes that share the file.
type Store struct {
	path  string  // the database file
	read  *sql.DB // read-only connections, for every query
	write *sql.DB // the one writer
	probe *sql.DB // a fresh read-only connection for each Ping (see probe.go)

	mu       sync.Mutex
	prepared map[string]*sql.Stmt  // read queries prepared on s.read, by text
	upserts  map[stmtKey]*sql.Stmt // upserts prepared on s.write (see batcher.stmt)

	slots chan struct{} // one per connection of s.read (see read.go)

	checkpoints *checkpointer // the WAL's checkpoint policy (see checkpoint.go)
}

var _ cdnapi.Store = (*Store)(nil)

// FileMode is the mode of the database files this package creates: the
// database holds the cursor secret and the hashes of the API keys, which
// no other user of the machine has any business reading, whatever the
// umask. SQLite gives the -wal and -shm files the mode of the database
// file, so they are private too. An existing file keeps its mode.
const FileMode = 0o600

// createPrivate creates the database file at path, empty and FileMode,
// unless it exists: SQLite would create it with 0644 less the umask.
func createPrivate(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, FileMode)
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return f.Close()
}

// Open opens the SQLite database at path, creating the file if it is
// missing, and switches it to WAL mode. The path is a file name, not a URI;
// it must not contain '?'. ctx bounds the opening only.
//
// Open does not touch the schema; call Migrate next.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	if path == "" || strings.ContainsRune(path, '?') || path == ":memory:" || strings.HasPrefix(path, "file:") {
		// Two pools need one shared file: an in-memory database would give
		// each connection its own. '?' would start the DSN's parameters.
		return nil, fmt.Errorf("sqlite: open %q: want the path of a database file: not :memory:, not a file: URI, no '?'", path)
	}
	if opts.ReadConns <= 0 {
		opts.ReadConns = max(defaultMinReadConns, runtime.NumCPU())
	}
	if opts.BusyTimeout <= 0 {
		opts.BusyTimeout = defaultBusyTimeout
	}
	if opts.WriterCacheKiB <= 0 {
		opts.WriterCacheKiB = DefaultWriterCacheKiB
	}

	if err := createPrivate(path); err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	write, err := sql.Open("sqlite", path+"?"+writerParams(opts).Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	write.SetMaxOpenConns(1)
	write.SetMaxIdleConns(1)
	write.SetConnMaxIdleTime(0)
	write.SetConnMaxLifetime(0)
	// The writer connects first: it creates the file and sets WAL mode,
	// which is a property of the file, before any reader opens it. The
	// switch takes a lock that another process creating the file may hold.
	if err := waitWrite(ctx, path, func() error { return write.PingContext(ctx) }); err != nil {
		write.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}

	read, err := sql.Open("sqlite", path+"?"+readerParams(opts).Encode())
	if err != nil {
		write.Close()
		return nil, fmt.Errorf("sqlite: open %s for reading: %w", path, err)
	}
	read.SetMaxOpenConns(opts.ReadConns)
	read.SetMaxIdleConns(opts.ReadConns)
	read.SetConnMaxIdleTime(0)
	read.SetConnMaxLifetime(0)
	if err := read.PingContext(ctx); err != nil {
		read.Close()
		write.Close()
		return nil, fmt.Errorf("sqlite: open %s for reading: %w", path, err)
	}
	probe, err := openProbe(path, opts)
	if err != nil {
		read.Close()
		write.Close()
		return nil, err
	}
	s := &Store{
		path: path, read: read, write: write, probe: probe,
		prepared: make(map[string]*sql.Stmt),
		upserts:  make(map[stmtKey]*sql.Stmt),
		slots:    make(chan struct{}, opts.ReadConns),
	}
	s.checkpoints = startCheckpointer(path, write, opts.BusyTimeout, walCheckInterval, walTruncateBytes)
	return s, nil
}

// writerParams returns the DSN parameters of the writer. modernc.org/sqlite
// runs busy_timeout first, the other _pragma values next in name order, and
// then _journal_mode and _synchronous, in that order. So busy_timeout is in
// force when the switch to WAL needs a lock, and page_size comes before it:
// the switch writes the header of a new file, which fixes its page size.
// The writer's busy_timeout is one try of waitWrite, which tries again
// while the context allows.
func writerParams(opts Options) url.Values {
	v := url.Values{}
	v.Set("_txlock", "immediate") // take the write lock at BEGIN, not mid-transaction
	v.Add("_pragma", "busy_timeout("+strconv.FormatInt(writerPoll.Milliseconds(), 10)+")")
	v.Add("_pragma", "page_size("+strconv.Itoa(pageSize)+")")
	v.Set("_journal_mode", "WAL")
	// NORMAL is durable against application crashes in WAL mode; only a
	// power loss can roll back the last transactions, never corrupt.
	v.Set("_synchronous", "NORMAL")
	v.Add("_pragma", "foreign_keys(1)")
	v.Add("_pragma", "temp_store(MEMORY)")
	v.Add("_pragma", "cache_size(-"+strconv.Itoa(opts.WriterCacheKiB)+")")
	return v
}

// readerParams returns the DSN parameters of the read pool. The readers use
// query_only rather than mode=ro: a read-only open cannot create the WAL's
// shared-memory file when it is the first connection to the database.
func readerParams(opts Options) url.Values {
	v := url.Values{}
	v.Add("_pragma", "busy_timeout("+strconv.FormatInt(opts.BusyTimeout.Milliseconds(), 10)+")")
	v.Add("_pragma", "foreign_keys(1)")
	v.Add("_pragma", "temp_store(MEMORY)")
	v.Add("_pragma", "cache_size(-"+strconv.Itoa(readerCacheKiB)+")")
	v.Add("_pragma", "query_only(1)")
	return v
}

// Close closes both pools. After Close every method returns an error.
func (s *Store) Close() error {
	s.checkpoints.close()
	s.mu.Lock()
	var errs []error
	for _, st := range s.prepared {
		errs = append(errs, st.Close())
	}
	clear(s.prepared)
	for _, st := range s.upserts {
		errs = append(errs, st.Close())
	}
	clear(s.upserts)
	s.mu.Unlock()
	return errors.Join(append(errs, s.probe.Close(), s.read.Close(), s.write.Close())...)
}

// unixTime converts the stored unix seconds back to a UTC time.
func unixTime(sec int64) time.Time { return time.Unix(sec, 0).UTC() }
