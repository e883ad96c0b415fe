package origin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cdnapi/cdnapi"
)

// hashBuffer is the buffer each hashing worker reads through: what a file
// costs in memory, whatever its size.
const hashBuffer = 256 << 10

// found is a regular file the walk found, with what lstat told of it.
type found struct {
	rel      string
	size     int64
	mtime    time.Time
	dev, ino uint64 // the file the walk saw, which hash must open
}

// job is a file to hash.
type job struct {
	found
	id string
}

// outcome is what hashing a file gave.
type outcome int

const (
	hashedOK outcome = iota
	gone             // not a regular file any more
	busy             // changed while it was read, or too recently
	failed           // could not be read
)

type hashed struct {
	job
	outcome  outcome
	checksum string
	wait     time.Duration // busy: when to look again
}

// pass indexes the files under the folders roots ("" is the whole tree) and
// the files at paths, and deletes from the list what they no longer hold:
// the files under roots that the walk did not find, when it read every
// folder, and the files at or under paths that are not regular files now.
// onDir, when not nil, is called with every folder walked. It returns what
// it did, and the files still being written, with how long to wait.
func (s *Syncer) pass(ctx context.Context, roots, paths []string, onDir func(string)) (res Result, pending map[string]time.Duration, err error) {
	s.passMu.Lock()
	defer s.passMu.Unlock()
	s.mu.Lock()
	s.gen++
	gen := s.gen
	loaded := s.state != nil
	s.mu.Unlock()

	// Every file and folder of the pass is opened beneath this (see
	// openBeneath), never by its full path.
	rootFD, err := openRoot(s.root)
	if err != nil {
		return res, nil, &os.PathError{Op: "open", Path: s.root, Err: err}
	}
	defer unix.Close(rootFD)

	// The walk and, on the first pass, the loading of the list run at once.
	founds := make(chan *batch, 256)
	var complete bool
	walked := make(chan struct{})
	go func() {
		defer close(walked)
		complete = s.produce(rootFD, roots, paths, founds, onDir)
	}()
	if !loaded {
		state, err := s.load(ctx)
		if err != nil {
			for range founds {
			}
			<-walked
			return res, nil, err
		}
		s.mu.Lock()
		s.state = state
		s.mu.Unlock()
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	jobs := make(chan job, 256)
	results := make(chan hashed, 256)
	var workers sync.WaitGroup
	for range s.o.Workers {
		workers.Go(func() {
			buf := make([]byte, hashBuffer)
			for j := range jobs {
				if ctx.Err() != nil {
					continue // stopping: hash nothing more
				}
				results <- s.hash(rootFD, j, buf)
			}
		})
	}
	c := &collector{s: s, res: &res, pending: make(map[string]time.Duration), stop: cancel}
	collected := make(chan error, 1)
	go func() { collected <- c.run(ctx, results) }()

	pending = make(map[string]time.Duration)
	p := s.o.Progress
	var key []byte // the key of a file's ID: project, NUL, path
	var todo []job
feed:
	for b := range founds {
		res.Files += int64(len(b.files))
		p.Files.Add(int64(len(b.files)))
		key = append(append(key[:0], s.o.Project...), 0)
		if b.dir != "" {
			key = append(append(key, b.dir...), '/')
		}
		prefix, start := len(key), 0
		todo = todo[:0]
		s.mu.Lock()
		for _, f := range b.files {
			key = append(key[:prefix], b.names[start:f.end]...)
			start = f.end
			k := keyOfFile(key)
			if e, ok := s.state.byKey[k]; ok {
				e.gen = gen
				s.state.byKey[k] = e
				if e.size == f.size && e.mtime == createdAt(f.mtime.Unix()).Unix() {
					res.Unchanged++
					continue
				}
			}
			todo = append(todo, job{found: found{rel: string(key[len(s.o.Project)+1:]), size: f.size, mtime: f.mtime,
				dev: f.dev, ino: f.ino}, id: k.id()})
		}
		s.mu.Unlock()
		for _, j := range todo {
			if ok, wait := settled(j.mtime, time.Now()); !ok {
				pending[j.rel] = wait
				continue
			}
			p.QueuedBytes.Add(j.size)
			select {
			case jobs <- j:
			case <-ctx.Done():
				break feed
			}
		}
	}
	for range founds { // after a failed commit: let the walk end
	}
	<-walked
	p.WalkDone.Store(true)
	close(jobs)
	workers.Wait()
	close(results)
	if err := <-collected; err != nil {
		return res, nil, err
	}
	if err := context.Cause(ctx); err != nil {
		// Stopped midway: what the pass did not look at is not gone.
		return res, nil, err
	}
	for rel, w := range c.pending {
		pending[rel] = w
	}
	res.Failed = c.failed
	res.Incomplete = !complete

	// What the pass looked at and did not find is gone.
	s.mu.Lock()
	dels := s.state.gone(gen, func(rel string) bool { return s.covers(roots, paths, rel, complete) })
	s.mu.Unlock()
	if err := c.commit(ctx, dels); err != nil {
		return res, nil, err
	}
	return res, pending, nil
}

// covers reports whether the file at rel was looked for by a pass of roots
// and paths: a file under a root, when the walk read every folder, or at or
// under a path.
func (s *Syncer) covers(roots, paths []string, rel string, complete bool) bool {
	for _, p := range paths {
		if rel == p || strings.HasPrefix(rel, p+"/") {
			return true
		}
	}
	if !complete {
		return false
	}
	for _, r := range roots {
		if r == "" || strings.HasPrefix(rel, r+"/") {
			return true
		}
	}
	return false
}

// produce sends the regular files under roots and at paths, beneath the
// origin rootFD, to out, then closes it. It reports whether it read
// everything it was to read.
func (s *Syncer) produce(rootFD int, roots, paths []string, out chan<- *batch, onDir func(string)) bool {
	complete := true
	for _, r := range roots {
		if !walk(s.root, rootFD, r, out, onDir, &s.Skipped, s.o.Warn) {
			complete = false
		}
	}
	for _, rel := range paths {
		st, err := lstatBeneath(rootFD, rel)
		if err != nil {
			if !notThere(err) {
				complete = false
				s.o.Warn("cannot read " + quoteName(rel) + ": " + err.Error())
			}
			continue
		}
		if classify(path.Base(rel), st.typ) == keep && st.typ.IsRegular() {
			b := &batch{}
			if dir := path.Dir(rel); dir != "." {
				b.dir = dir
			}
			b.add([]byte(path.Base(rel)), st)
			out <- b
		}
	}
	close(out)
	return complete
}

// hash reads the file of j through buf and returns its checksum, with its
// size and time as of the read. The file is opened beneath the origin
// rootFD without following a symbolic link at any name of its path (see
// openBeneath), and without blocking on a named pipe, any of which may have
// replaced it or a folder above it since the walk; it must be the very file
// the walk saw (device and inode), must not change while it is read, and
// must have stopped changing Settle before (see settled).
func (s *Syncer) hash(rootFD int, j job, buf []byte) hashed {
	h := hashed{job: j}
	if s.beforeHash != nil {
		s.beforeHash(j.rel)
	}
	fd, err := openBeneath(rootFD, j.rel, unix.O_RDONLY|unix.O_NONBLOCK)
	if err != nil {
		if notThere(err) {
			h.outcome = gone
		} else {
			h.outcome = failed
			s.o.Warn("cannot read " + quoteName(j.rel) + ": " + err.Error())
		}
		return h
	}
	f := os.NewFile(uintptr(fd), j.rel)
	defer f.Close()
	before, err := f.Stat()
	if err != nil || !before.Mode().IsRegular() {
		h.outcome = gone
		return h
	}
	if st, ok := before.Sys().(*syscall.Stat_t); !ok || uint64(st.Dev) != j.dev || uint64(st.Ino) != j.ino {
		// Another file took its place since the walk: it is not read
		// now, but looked at again once settled, by its path beneath the
		// origin.
		s.o.Warn(quoteName(j.rel) + " was replaced since the walk saw it: looked at again later")
		h.outcome, h.wait = busy, Settle
		return h
	}
	h.size, h.mtime = before.Size(), before.ModTime()
	if ok, wait := settled(h.mtime, time.Now()); !ok {
		h.outcome, h.wait = busy, wait
		return h
	}
	sum := sha256.New()
	var n int64
	for {
		// Not io.CopyBuffer: *os.File's WriteTo would take over, and
		// allocate a buffer of its own for every file.
		k, err := f.Read(buf)
		sum.Write(buf[:k])
		n += int64(k)
		s.o.Progress.HashedBytes.Add(int64(k))
		if err == io.EOF {
			break
		}
		if err != nil {
			h.outcome = failed
			s.o.Warn("cannot read " + quoteName(j.rel) + ": " + err.Error())
			return h
		}
	}
	after, err := f.Stat()
	if err != nil || n != h.size || after.Size() != h.size || !after.ModTime().Equal(h.mtime) {
		h.outcome, h.wait = busy, Settle
		return h
	}
	s.o.Progress.Hashed.Add(1)
	var b [sha256.Size]byte
	h.checksum = "sha256:" + hex.EncodeToString(sum.Sum(b[:0]))
	return h
}

// collector writes what the workers hashed, in batches.
type collector struct {
	s       *Syncer
	res     *Result
	puts    []cdnapi.File
	dels    []string
	pending map[string]time.Duration
	failed  int64
	last    time.Time               // of the last commit
	stop    context.CancelCauseFunc // cancels the pass when a commit fails
}

func (c *collector) run(ctx context.Context, results <-chan hashed) error {
	c.last = time.Now()
	tick := time.NewTicker(c.s.o.BatchTime / 4)
	defer tick.Stop()
	var err error
	for {
		select {
		case h, ok := <-results:
			if !ok {
				return err
			}
			if err != nil {
				continue // drain
			}
			c.add(h)
			if len(c.puts)+len(c.dels) >= c.s.o.BatchFiles {
				err = c.commit(ctx, nil)
			}
		case <-tick.C:
			if err == nil && time.Since(c.last) >= c.s.o.BatchTime {
				err = c.commit(ctx, nil)
			}
		}
		if err != nil && c.stop != nil {
			c.stop(err) // the pass feeds no more
			c.stop = nil
		}
	}
}

func (c *collector) add(h hashed) {
	switch h.outcome {
	case hashedOK:
		c.res.Hashed++
		c.res.HashedBytes += h.size
		c.puts = append(c.puts, cdnapi.File{ID: h.id, Project: c.s.o.Project, CreatedAt: createdAt(h.mtime.Unix()),
			Filename: h.rel, Bytes: h.size, Checksum: h.checksum})
	case gone:
		c.dels = append(c.dels, h.id)
	case busy:
		c.pending[h.rel] = h.wait
	case failed:
		c.failed++
	}
}

// commit writes the batch and deletes more, in one transaction, then
// records them in the Syncer's state.
func (c *collector) commit(ctx context.Context, more []string) error {
	c.last = time.Now()
	dels := append(c.dels, more...)
	if len(c.puts) == 0 && len(dels) == 0 {
		return nil
	}
	project := c.s.o.Project
	err := c.s.st.Write(ctx, func(w cdnapi.Writer) error {
		if err := w.PutFiles(ctx, c.puts); err != nil {
			return err
		}
		return w.DeleteFiles(ctx, project, dels)
	})
	if err != nil {
		return err
	}
	c.s.mu.Lock()
	for _, f := range c.puts {
		c.s.state.put(f.ID, entry{rel: f.Filename, size: f.Bytes, mtime: f.CreatedAt.Unix(), gen: c.s.gen})
	}
	for _, id := range dels {
		c.s.state.delete(id)
	}
	c.s.mu.Unlock()
	c.res.Put += int64(len(c.puts))
	c.res.Deleted += int64(len(dels))
	c.puts, c.dels = c.puts[:0], nil
	return nil
}
