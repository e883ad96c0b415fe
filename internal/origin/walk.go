package origin

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// entryStat is what lstat tells of an entry of a folder.
type entryStat struct {
	typ      fs.FileMode
	size     int64
	mtime    time.Time
	dev, ino uint64 // which file it is: the one hashed must be the same
}

// batch is regular files of one folder, as the walk found them: sent
// together, so that a walk costs one channel send and one lock of the
// Syncer's state per folder, not per file, and an unchanged file costs no
// allocation at all (its path is put together only if it must be read).
type batch struct {
	dir   string // the folder, relative to the origin ("" for the origin itself)
	names []byte // the files' names, end to end
	files []batchFile
}

type batchFile struct {
	end      int // the name is names[end of the file before : end]
	size     int64
	mtime    time.Time
	dev, ino uint64
}

// batchMax bounds the files of a batch, and so its memory, in a folder of
// very many files.
const batchMax = 1024

func (b *batch) add(name []byte, st entryStat) {
	b.names = append(b.names, name...)
	b.files = append(b.files, batchFile{end: len(b.names), size: st.size, mtime: st.mtime, dev: st.dev, ino: st.ino})
}

// walker lists the regular files under a folder of the origin, reading
// folders in parallel: with a warm cache a walk is system calls, one
// getdents per folder and one lstat per file, which a single goroutine
// makes one at a time. walkParallel goroutines take folders from a stack of
// those found and not read yet.
type walker struct {
	root    string
	rootFD  int // the origin, which every folder is opened beneath
	out     chan<- *batch
	onDir   func(abs string) // called for every folder kept, before it is read; may be nil
	skipped *Skipped
	warn    func(string)
	failed  atomic.Bool // a folder or file could not be read: the walk missed some

	mu      sync.Mutex
	wake    sync.Cond
	todo    []string // folders to read, relative to root
	reading int      // folders being read, which may add to todo
}

// walkParallel is how many folders are read at once.
const walkParallel = 4

// walk sends every regular file under rel ("" for the whole origin) to
// out. root is the origin's path, rootFD the origin opened (see
// openBeneath). It reports false if some folder or file could not be read,
// so that what it did not see is not taken as gone.
func walk(root string, rootFD int, rel string, out chan<- *batch, onDir func(string), skipped *Skipped, warn func(string)) bool {
	w := &walker{root: root, rootFD: rootFD, out: out, onDir: onDir, skipped: skipped, warn: warn, todo: []string{rel}}
	w.wake.L = &w.mu
	var wg sync.WaitGroup
	for range walkParallel {
		wg.Go(w.run)
	}
	wg.Wait()
	return !w.failed.Load()
}

// run reads folders until none is left and none is being read.
func (w *walker) run() {
	var buf []byte // the getdents buffer, one per goroutine
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		for len(w.todo) == 0 && w.reading > 0 {
			w.wake.Wait()
		}
		if len(w.todo) == 0 {
			return
		}
		rel := w.todo[len(w.todo)-1]
		w.todo = w.todo[:len(w.todo)-1]
		w.reading++
		w.mu.Unlock()
		subs := w.dir(rel, &buf)
		w.mu.Lock()
		w.reading--
		w.todo = append(w.todo, subs...)
		if len(subs) > 0 || w.reading == 0 {
			w.wake.Broadcast()
		}
	}
}

// dir reads the folder rel, sends its regular files to out, and returns its
// subfolders.
func (w *walker) dir(rel string, buf *[]byte) (subs []string) {
	abs := filepath.Join(w.root, filepath.FromSlash(rel))
	if w.onDir != nil {
		w.onDir(abs)
	}
	f, err := openFolder(w.rootFD, rel, buf)
	if err != nil {
		if rel != "" && (errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.ENOTDIR)) {
			return nil // no longer a folder: replaced since its parent was read
		}
		w.fail(rel, err)
		return nil
	}
	defer f.close()
	b := &batch{dir: rel}
	for {
		name, err := f.next()
		if err != nil {
			w.fail(rel, err)
			break // go on with what was read
		}
		if name == nil {
			break
		}
		if w.skip(rel, name, classify(string(name), 0)) { // by name alone
			continue
		}
		st, err := f.lstat(name)
		if err != nil {
			if !errors.Is(err, syscall.ENOENT) { // gone since the folder was read: not there
				w.fail(path.Join(rel, string(name)), err)
			}
			continue
		}
		if w.skip(rel, name, classify(string(name), st.typ)) {
			continue
		}
		if st.typ.IsDir() {
			subs = append(subs, path.Join(rel, string(name)))
			continue
		}
		b.add(name, st)
		if len(b.files) == batchMax {
			w.out <- b
			b = &batch{dir: rel}
		}
	}
	if len(b.files) > 0 {
		w.out <- b
	}
	return subs
}

// skip counts an entry left out by rule k, and reports whether it is.
func (w *walker) skip(rel string, name []byte, k skip) bool {
	switch k {
	case hidden:
		w.skipped.Hidden.Add(1)
	case badName:
		w.skipped.BadNames.Add(1)
		w.warn("skipped " + quoteName(path.Join(rel, string(name))) + ": the name is not UTF-8 text")
	case symlink:
		w.skipped.Symlinks.Add(1)
	case special:
		w.skipped.Special.Add(1)
	default:
		return false
	}
	return true
}

func (w *walker) fail(rel string, err error) {
	if os.IsNotExist(err) && rel != "" {
		return // removed while the walk ran
	}
	w.failed.Store(true)
	w.warn("cannot read " + quoteName(rel) + ": " + err.Error())
}

// quoteName shows a path in a message: quoted, with what is not printable
// escaped, "." for the origin itself.
func quoteName(rel string) string {
	if rel == "" {
		rel = "."
	}
	return strconv.Quote(rel)
}
