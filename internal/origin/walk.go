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
	"time"

	"golang.org/x/sys/unix"
)

// found is a regular file the walk found, with what lstat told of it.
type found struct {
	rel   string
	size  int64
	mtime time.Time
}

// walker lists the regular files under a folder of the origin, reading
// folders in parallel: with a warm cache a walk is system calls, one
// getdents per folder and one lstat per file, which a single goroutine
// makes one at a time.
type walker struct {
	root    string
	out     chan<- found
	onDir   func(abs string) // called for every folder kept, before it is read; may be nil
	skipped *Skipped
	warn    func(string)
	failed  atomic.Bool // a folder or file could not be read: the walk missed some
	sem     chan struct{}
	wg      sync.WaitGroup
}

// walkParallel is how many folders are read at once.
const walkParallel = 4

// walk sends every regular file under rel ("" for the whole origin) to out. It reports false if some folder or file could not be
// read, so that what it did not see is not taken as gone.
func walk(root, rel string, out chan<- found, onDir func(string), skipped *Skipped, warn func(string)) bool {
	w := &walker{root: root, out: out, onDir: onDir, skipped: skipped, warn: warn, sem: make(chan struct{}, walkParallel-1)}
	w.wg.Add(1)
	w.dir(rel)
	w.wg.Wait()
	return !w.failed.Load()
}

// dir reads the folder rel and, in turn or in parallel, its subfolders.
func (w *walker) dir(rel string) {
	defer w.wg.Done()
	abs := filepath.Join(w.root, filepath.FromSlash(rel))
	if w.onDir != nil {
		w.onDir(abs)
	}
	f, err := os.Open(abs)
	if err != nil {
		w.fail(rel, err)
		return
	}
	defer f.Close()
	// Names, then one fstatat each, relative to the folder: the type,
	// size and time in one system call, without looking the folder's path
	// up again. (ReadDir's entries would cost an lstat of the full path
	// each, and allocate more.)
	names, err := f.Readdirnames(-1)
	if err != nil {
		w.fail(rel, err)
		// Go on with what was read.
	}
	fd := int(f.Fd())
	for _, name := range names {
		if w.skip(rel, name, classify(name, 0)) { // by name alone
			continue
		}
		var st unix.Stat_t
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if !errors.Is(err, unix.ENOENT) { // gone since the folder was read: not there
				w.fail(path.Join(rel, name), err)
			}
			continue
		}
		typ := statType(st.Mode)
		if w.skip(rel, name, classify(name, typ)) {
			continue
		}
		sub := path.Join(rel, name)
		if typ.IsDir() {
			w.wg.Add(1)
			select {
			case w.sem <- struct{}{}:
				go func() {
					defer func() { <-w.sem }()
					w.dir(sub)
				}()
			default:
				w.dir(sub)
			}
			continue
		}
		w.out <- found{rel: sub, size: st.Size, mtime: time.Unix(st.Mtim.Unix())}
	}
}

// skip counts an entry left out by rule k, and reports whether it is.
func (w *walker) skip(rel, name string, k skip) bool {
	switch k {
	case hidden:
		w.skipped.Hidden.Add(1)
	case badName:
		w.skipped.BadNames.Add(1)
		w.warn("skipped " + quoteName(path.Join(rel, name)) + ": the name is not UTF-8 text")
	case symlink:
		w.skipped.Symlinks.Add(1)
	case special:
		w.skipped.Special.Add(1)
	default:
		return false
	}
	return true
}

// statType is the type of a file as fs.FileMode tells it, from stat's mode.
func statType(mode uint32) fs.FileMode {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return 0
	case unix.S_IFDIR:
		return fs.ModeDir
	case unix.S_IFLNK:
		return fs.ModeSymlink
	}
	return fs.ModeDevice // or a pipe, a socket: special all the same
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
