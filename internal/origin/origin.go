// Package origin keeps a project's files list true to an origin: a folder
// tree, as a web server serves it. Each regular file under the folder is a
// File whose filename is its path from the folder, whose checksum is the
// SHA-256 of its content, whose created_at is its modification time, and
// whose ID is derived from the project and the path (see ID). A Syncer
// indexes the tree (Sync), hashing in parallel only the files whose size or
// modification time differ from what the list holds, and deleting from the
// list what the tree no longer holds; Follow then keeps the list in sync
// from inotify events and periodic full rescans.
//
// The project belongs to its origin: a sync deletes every file of the
// project that the tree does not hold, including files ingested otherwise.
package origin

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cdnapi/cdnapi"
)

// Store is what a Syncer needs of the store: the list's stamps, to learn
// what it holds, and transactions to change it.
type Store interface {
	cdnapi.FileStampReader
	cdnapi.Transactor
}

// Options configure a Syncer.
type Options struct {
	Project string
	// Workers is how many files are hashed at once; default GOMAXPROCS.
	Workers int
	// BatchFiles and BatchTime bound a transaction: a run commits its
	// changes every BatchFiles files or BatchTime, whichever comes first
	// (default 5,000 and 1s), so that a run killed midway keeps, and does
	// not hash again, what it committed.
	BatchFiles int
	BatchTime  time.Duration
	// Progress, when not nil, counts the work as it is done.
	Progress *Progress
	// Warn receives what is worth telling the operator: a name skipped, a
	// folder that could not be read. Default: nothing.
	Warn func(msg string)
}

// Progress counts a run's work, for a live display; safe for concurrent use.
type Progress struct {
	Files       atomic.Int64 // regular files found
	Hashed      atomic.Int64 // files hashed
	HashedBytes atomic.Int64 // bytes hashed
	QueuedBytes atomic.Int64 // bytes of the files hashed or to hash
	WalkDone    atomic.Bool  // all files are found: QueuedBytes is the total
}

// Skipped counts the entries of the tree that are not files of the list, by
// the rule that left them out.
type Skipped struct {
	Hidden   atomic.Int64 // names starting with "."
	Symlinks atomic.Int64 // symbolic links, not followed
	Special  atomic.Int64 // devices, named pipes, sockets
	BadNames atomic.Int64 // names that are not UTF-8 text
}

// Result is what a run did.
type Result struct {
	Files       int64 // regular files found
	Unchanged   int64 // of those, with the size and time the list holds: not read
	Hashed      int64 // files hashed
	HashedBytes int64
	Put         int64 // rows written: files new or changed
	Deleted     int64 // rows deleted: files gone
	Pending     int64 // files still being written, left as the list had them
	Failed      int64 // files that could not be read, left as the list had them
	// Incomplete is set when some folder or file could not be read: the
	// run then deletes nothing, since it cannot tell what is gone.
	Incomplete bool
}

// Written is the number of rows the run wrote.
func (r Result) Written() int64 { return r.Put + r.Deleted }

// Syncer syncs one project's files with one folder.
type Syncer struct {
	st      Store
	root    string
	o       Options
	Skipped Skipped

	beforeHash func(rel string) // a test's hook; nil outside tests

	mu     sync.Mutex
	state  *listState // what the list holds; nil until loaded
	gen    uint64     // the number of the current pass
	passMu sync.Mutex // one pass at a time
}

// New returns a Syncer of the files of o.Project with the folder dir. A
// symbolic link as dir itself is followed.
func New(st Store, dir string, o Options) (*Syncer, error) {
	if !cdnapi.ValidProject(o.Project) {
		return nil, fmt.Errorf("project must be %s", cdnapi.ProjectRule)
	}
	root, err := filepath.Abs(dir)
	if err == nil {
		root, err = filepath.EvalSymlinks(root)
	}
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(root)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a folder", dir)
	}
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	if o.BatchFiles <= 0 {
		o.BatchFiles = 5000
	}
	if o.BatchTime <= 0 {
		o.BatchTime = time.Second
	}
	if o.Progress == nil {
		o.Progress = new(Progress)
	}
	if o.Warn == nil {
		o.Warn = func(string) {}
	}
	return &Syncer{st: st, root: root, o: o}, nil
}

// Root is the folder, as an absolute path without symbolic links.
func (s *Syncer) Root() string { return s.root }

// maxSettleWait is how long Sync waits for files still being written to
// settle before it leaves them as they were.
const maxSettleWait = 10 * time.Second

// Sync indexes the whole tree once: it writes the files that are new or
// changed and deletes those that are gone. A file modified less than Settle
// ago is indexed once it has not changed for that long; one that is still
// changing after maxSettleWait is left as the list had it, and counted in
// Pending. The changes are committed in batches (see Options): a reader may
// see a run's changes in parts, each file whole.
func (s *Syncer) Sync(ctx context.Context) (Result, error) {
	res, pending, err := s.pass(ctx, []string{""}, nil, nil)
	deadline := time.Now().Add(maxSettleWait)
	for err == nil && len(pending) > 0 && time.Now().Before(deadline) {
		wait := time.Duration(1<<63 - 1)
		var rels []string
		for rel, w := range pending {
			rels = append(rels, rel)
			wait = min(wait, w)
		}
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(wait):
		}
		var more Result
		more, pending, err = s.pass(ctx, nil, rels, nil)
		res.Hashed += more.Hashed
		res.HashedBytes += more.HashedBytes
		res.Put += more.Put
		res.Deleted += more.Deleted
		res.Failed += more.Failed
		res.Incomplete = res.Incomplete || more.Incomplete
	}
	res.Pending = int64(len(pending))
	for rel := range pending {
		s.o.Warn(fmt.Sprintf("%s is still being written: left as the list had it", quoteName(rel)))
	}
	return res, err
}

// load reads what the list holds of the project: its stamps, in one read,
// without the checksums, which a sync does not compare.
func (s *Syncer) load(ctx context.Context) (*listState, error) {
	state := newListState()
	err := s.st.FileStamps(ctx, s.o.Project, func(f cdnapi.FileStamp) error {
		state.put(f.ID, entry{rel: f.Filename, size: f.Bytes, mtime: f.CreatedAt})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return state, nil
}
