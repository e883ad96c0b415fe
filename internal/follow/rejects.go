package follow

import (
	"fmt"
	"os"
)

// RejectsFile is a Config.Rejects that bounds the disk it takes: it
// appends to its file until the next line would take it past max bytes,
// then renames it to the same name with ".1" (replacing the one before)
// and starts a new one. A flood of invalid lines therefore takes at most
// twice max, and the latest of them are kept, each whole. Not safe for
// concurrent use; a follower writes from one goroutine.
type RejectsFile struct {
	path string
	max  int64
	f    *os.File
	size int64
}

// OpenRejects opens, or creates, the rejects file at path, of at most max
// bytes before it is rotated.
func OpenRejects(path string, max int64) (*RejectsFile, error) {
	if max <= 0 {
		return nil, fmt.Errorf("the rejects file's bound must be positive, not %d", max)
	}
	r := &RejectsFile{path: path, max: max}
	if err := r.open(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *RejectsFile) open() error {
	f, err := os.OpenFile(r.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	r.f, r.size = f, fi.Size()
	return nil
}

// Write appends p, one line with its newline, rotating the file first if p
// would take it past its bound. A line longer than the bound is cut to it.
func (r *RejectsFile) Write(p []byte) (int, error) {
	n := len(p)
	if int64(len(p)) > r.max {
		p = p[:r.max]
	}
	if r.size > 0 && r.size+int64(len(p)) > r.max {
		if err := r.rotate(); err != nil {
			return 0, err
		}
	}
	k, err := r.f.Write(p)
	r.size += int64(k)
	if err != nil {
		return k, err
	}
	return n, nil
}

func (r *RejectsFile) rotate() error {
	if err := r.f.Close(); err != nil {
		return err
	}
	if err := os.Rename(r.path, r.path+".1"); err != nil {
		return err
	}
	return r.open()
}

// Close closes the file.
func (r *RejectsFile) Close() error { return r.f.Close() }
