package follow

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/cdnapi/cdnapi"
)

// headBytes is how much of a file's start its fingerprint covers: a few
// lines of an access log, each with a request ID of its own, so two logs
// never share it, while a copy of a log (copytruncate) does.
const headBytes = 1024

// logFile is one open file of the log, locked, with its identity.
type logFile struct {
	f    *os.File
	path string // where it was opened
	dev  uint64
	ino  uint64
	// head and headLen are the fingerprint of the file's first headLen
	// bytes; headLen grows with the file up to headBytes. headBuf holds
	// those bytes while the file is read from its start.
	head    string
	headLen int64
	headBuf []byte
}

// errLocked is returned when another process holds a file's lock.
var errLocked = errors.New("another follower is reading this file")

// openLog opens path and takes its lock (see lock).
func openLog(path string) (*logFile, error) {
	lf, err := openFile(path)
	if err != nil {
		return nil, err
	}
	if err := lf.lock(); err != nil {
		lf.close()
		return nil, err
	}
	return lf, nil
}

// openFile opens path without locking it.
func openFile(path string) (*logFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	lf := &logFile{f: f, path: path}
	lf.dev, lf.ino = identity(fi)
	return lf, nil
}

// lock takes the file's lock: flock(2) on the file itself. It follows the
// file through a rename, the kernel drops it when the process dies (kill
// -9 included), and nginx and logrotate never take it, so only another
// follower of the same file can hold it.
func (lf *logFile) lock() error {
	err := syscall.Flock(int(lf.f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return fmt.Errorf("%s: %w", lf.path, errLocked)
	}
	if err != nil {
		return fmt.Errorf("lock %s: %w", lf.path, err)
	}
	return nil
}

func (lf *logFile) close() error { return lf.f.Close() } // also drops the lock

// identity returns the device and inode of a file.
func identity(fi os.FileInfo) (dev, ino uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev), st.Ino
	}
	return 0, 0
}

// size returns the file's current size.
func (lf *logFile) size() (int64, error) {
	fi, err := lf.f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// fingerprint returns the hex SHA-256 of the first n bytes of f, or false
// when f holds fewer.
func fingerprint(f *os.File, n int64) (string, bool) {
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, 0); err != nil {
		return "", false
	}
	sum := sha256.Sum256(buf)
	return hex.EncodeToString(sum[:]), true
}

// noteHead extends the fingerprint with raw, the bytes of the file at at,
// as they were read: while the file is read from its start, the
// fingerprint is made of the very bytes handed out, never of what the file
// holds later (it may have been truncated since).
func (lf *logFile) noteHead(at int64, raw []byte) {
	if lf.headLen >= headBytes {
		return
	}
	if at != int64(len(lf.headBuf)) {
		// Not read from the start (a position taken up again): the bytes
		// before at were read by another process, so read them now.
		if h, ok := fingerprint(lf.f, min(at+int64(len(raw)), headBytes)); ok {
			lf.head, lf.headLen = h, min(at+int64(len(raw)), headBytes)
		}
		return
	}
	lf.headBuf = append(lf.headBuf, raw[:min(int64(len(raw)), headBytes-at)]...)
	sum := sha256.Sum256(lf.headBuf)
	lf.head, lf.headLen = hex.EncodeToString(sum[:]), int64(len(lf.headBuf))
}

// forgetHead drops the fingerprint, of a file truncated since it was made.
func (lf *logFile) forgetHead() { lf.head, lf.headLen, lf.headBuf = "", 0, nil }

// headChanged reports whether the bytes the fingerprint covers are no
// longer those it was made of: the file was truncated and written again.
func (lf *logFile) headChanged() bool {
	if lf.headLen == 0 {
		return false
	}
	h, ok := fingerprint(lf.f, lf.headLen)
	return !ok || h != lf.head
}

// is reports whether lf is the file a position names: the same device and
// inode, and, when the position has a fingerprint, the same first bytes
// (an inode is reused once its file is deleted).
func (lf *logFile) is(p cdnapi.LogPosition) bool {
	if lf.dev != p.Device || lf.ino != p.Inode {
		return false
	}
	return lf.matchesHead(p)
}

// matchesHead reports whether lf starts with the bytes p's fingerprint
// covers.
func (lf *logFile) matchesHead(p cdnapi.LogPosition) bool {
	if p.HeadBytes == 0 {
		return true
	}
	h, ok := fingerprint(lf.f, p.HeadBytes)
	if ok {
		lf.head, lf.headLen = h, p.HeadBytes
	}
	return ok && h == p.Head
}

// rotated lists the files beside path whose names start with its name,
// such as access.log.1 or access.log-20261125: where logrotate and people
// put a rotated log. Compressed ones are left out: they can't be read on.
// Newest first.
func rotated(path string) []string {
	dir, base := filepath.Split(path)
	entries, err := os.ReadDir(filepath.Clean(dir))
	if err != nil {
		return nil
	}
	type cand struct {
		path  string
		mtime int64
	}
	var out []cand
	for _, e := range entries {
		name := e.Name()
		if name == base || !strings.HasPrefix(name, base) || e.IsDir() {
			continue
		}
		switch filepath.Ext(name) {
		case ".gz", ".bz2", ".xz", ".zst", ".lz4", ".zip":
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		out = append(out, cand{filepath.Join(dir, name), info.ModTime().UnixNano()})
	}
	slices.SortFunc(out, func(a, b cand) int { return int(b.mtime - a.mtime) })
	paths := make([]string, len(out))
	for i, c := range out {
		paths[i] = c.path
	}
	return paths
}

// oldestFirst reverses rotated's order.
func oldestFirst(paths []string) []string {
	slices.Reverse(paths)
	return paths
}

// findFile looks beside path for the file that p names, renamed (the same
// inode and head) or copied (the same head, at least p.Offset bytes long),
// and opens it. It returns nil when none is there.
func findFile(path string, p cdnapi.LogPosition) (*logFile, error) {
	for _, want := range []func(*logFile) bool{
		func(lf *logFile) bool { return lf.is(p) },
		func(lf *logFile) bool {
			size, err := lf.size()
			return err == nil && size >= p.Offset && p.HeadBytes > 0 && lf.matchesHead(p)
		},
	} {
		for _, cand := range rotated(path) {
			lf, err := openFile(cand)
			if err != nil {
				continue
			}
			if !want(lf) {
				lf.close()
				continue
			}
			if err := lf.lock(); err != nil {
				lf.close()
				return nil, err
			}
			return lf, nil
		}
	}
	return nil, nil
}

// readAt reads from lf at off into buf, returning what it read; io.EOF is
// not an error.
func (lf *logFile) readAt(buf []byte, off int64) (int, error) {
	n, err := lf.f.ReadAt(buf, off)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return n, err
}
