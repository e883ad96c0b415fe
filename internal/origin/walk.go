package origin

import (
	"os"
	"path"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
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
	entries, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		w.fail(rel, err)
		// Go on with what was read.
	}
	for _, e := range entries {
		name := e.Name()
		switch classify(name, e.Type()) {
		case hidden:
			w.skipped.Hidden.Add(1)
			continue
		case badName:
			w.skipped.BadNames.Add(1)
			w.warn("skipped " + quoteName(path.Join(rel, name)) + ": the name is not UTF-8 text")
			continue
		case symlink:
			w.skipped.Symlinks.Add(1)
			continue
		case special:
			w.skipped.Special.Add(1)
			continue
		}
		sub := path.Join(rel, name)
		if e.IsDir() {
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
		fi, err := e.Info() // lstat
		if err != nil {
			if !os.IsNotExist(err) { // gone since the folder was read: not there
				w.fail(sub, err)
			}
			continue
		}
		if !fi.Mode().IsRegular() { // replaced since the folder was read
			continue
		}
		w.out <- found{rel: sub, size: fi.Size(), mtime: fi.ModTime()}
	}
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
