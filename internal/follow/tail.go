package follow

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/ingest"
)

// tailer reads the complete lines of a log, as tail -F does: on as lines
// are appended, and across rotations, both rename-and-reopen (mv, then
// nginx -s reopen: logrotate's default) and copytruncate. Its offset is
// always the end of the last line it handed out, so a position taken from
// it never falls inside a line: a partly written last line waits for its
// newline.
//
// It polls rather than waiting on inotify: a poll is two system calls, it
// sees renames, truncations and files on any file system alike, and every
// poll interval is the only latency it adds.
type tailer struct {
	path  string
	grace time.Duration // how long a rotated file must be quiet before it is left
	log   *slog.Logger
	now   func() time.Time

	cur *logFile
	off int64  // end of the last line handed out, in cur
	buf []byte // bytes of cur from off on, read but not handed out
	// copy is set while cur is the copy that copytruncate left: it is
	// complete, so it is left at its end without waiting. live is then
	// the file that was truncated, to go on with.
	copy bool
	live *logFile
	// quietSince is when cur was last found at its end with the path
	// naming another file; zero while it is not.
	quietSince time.Time
	// long is the start of an unfinished line longer than
	// ingest.MaxLineBytes, and dropped the count of its bytes read past
	// that, which are not kept.
	long      []byte
	dropped   int64
	waitedFor bool // the path was missing and that was logged
}

// readChunk is how much one read takes from the file.
const readChunk = 256 << 10

// errStop is returned by poll when visit asked it to stop.
var errStop = errors.New("stop")

// open positions t at p: the file p names and the offset in it, or the
// start of the file at t.path when p is zero. When p's file was rotated
// while no one followed it, t finishes it first if it can still find it,
// and says plainly when it cannot.
func (t *tailer) open(p cdnapi.LogPosition) error {
	lf, err := openFile(t.path)
	if err != nil {
		return err
	}
	if p == (cdnapi.LogPosition{}) {
		return t.start(lf, 0)
	}
	if lf.dev == p.Device && lf.ino == p.Inode {
		size, err := lf.size()
		if err != nil {
			lf.close()
			return err
		}
		if size >= p.Offset && lf.matchesHead(p) {
			return t.start(lf, p.Offset)
		}
		// Truncated while no one followed it: copytruncate.
		if err := lf.lock(); err != nil {
			lf.close()
			return err
		}
		return t.afterTruncation(lf, p)
	}
	lf.close()
	old, err := findFile(t.path, p)
	if err != nil {
		return err
	}
	if old == nil {
		t.log.Error("the file of the committed position is gone: its lines after the position are lost; going on with the log's current file from its start",
			"path", p.Path, "inode", p.Inode, "offset", p.Offset)
		lf, err := openLog(t.path)
		if err != nil {
			return err
		}
		t.cur, t.off = lf, 0
		return nil
	}
	t.log.Info("the log was rotated while no one followed it: finishing the rotated file first",
		"path", old.path, "offset", p.Offset)
	t.cur, t.off = old, p.Offset
	t.copy = !(old.dev == p.Device && old.ino == p.Inode)
	return nil
}

// start makes lf, unlocked, the current file at off.
func (t *tailer) start(lf *logFile, off int64) error {
	if err := lf.lock(); err != nil {
		lf.close()
		return err
	}
	t.cur, t.off = lf, off
	return nil
}

// afterTruncation goes on after live, locked, was found truncated while t
// was at position p of it: with the copy of it that copytruncate made, if
// it is there, from p's offset, and then with live from its start.
func (t *tailer) afterTruncation(live *logFile, p cdnapi.LogPosition) error {
	live.forgetHead() // it starts again from nothing
	cp, err := findFile(t.path, p)
	if err != nil {
		live.close()
		return err
	}
	if cp == nil {
		t.log.Error("the log was truncated and no copy of it was found beside it: lines written after the position are lost",
			"path", t.path, "offset", p.Offset)
		t.cur, t.off = live, 0
		t.buf, t.long, t.dropped = t.buf[:0], nil, 0
		return nil
	}
	t.log.Info("the log was truncated (copytruncate): finishing its copy first", "copy", cp.path, "offset", p.Offset)
	t.cur, t.off = cp, p.Offset
	t.buf, t.long, t.dropped = t.buf[:0], nil, 0
	t.copy, t.live = true, live
	return nil
}

// position returns where t is: the current file and the end of the last
// line handed out.
func (t *tailer) position() cdnapi.LogPosition {
	return cdnapi.LogPosition{
		Path: t.cur.path, Device: t.cur.dev, Inode: t.cur.ino, Offset: t.off,
		Head: t.cur.head, HeadBytes: t.cur.headLen,
	}
}

// close releases the files t holds.
func (t *tailer) close() {
	if t.cur != nil {
		t.cur.close()
	}
	if t.live != nil {
		t.live.close()
	}
}

// poll hands visit every complete line the log holds now, in order, each
// without its newline and valid only during the call, with tooLong set
// (and the line cut) when it is longer than ingest.MaxLineBytes. It
// returns nil once it has read all there is, or errStop as soon as visit
// returns false; t's position is then just past the line visit refused to
// go on after. It moves to the next file when the current one was rotated.
func (t *tailer) poll(visit func(line []byte, tooLong bool) bool) error {
	for {
		n, err := t.fill()
		if err != nil {
			return err
		}
		if !t.split(visit) {
			return errStop
		}
		if n > 0 {
			t.quietSince = time.Time{}
			continue
		}
		moved, err := t.atEnd(visit)
		if err != nil || !moved {
			return err
		}
	}
}

// fill reads what cur holds past buf into buf.
func (t *tailer) fill() (int, error) {
	if cap(t.buf)-len(t.buf) < readChunk {
		t.buf = append(make([]byte, 0, len(t.buf)+readChunk), t.buf...)
	}
	free := t.buf[len(t.buf):cap(t.buf)]
	n, err := t.cur.readAt(free, t.readPos())
	t.buf = t.buf[:len(t.buf)+n]
	if err != nil {
		return n, fmt.Errorf("read %s: %w", t.cur.path, err)
	}
	return n, nil
}

// split hands visit the complete lines in buf and keeps the rest. It
// returns false when visit did.
func (t *tailer) split(visit func([]byte, bool) bool) bool {
	start := 0
	defer func() { t.buf = t.buf[:copy(t.buf, t.buf[start:])] }()
	for {
		i := bytes.IndexByte(t.buf[start:], '\n')
		if i < 0 {
			t.keepLong(start)
			return true
		}
		line := t.buf[start : start+i]
		lineLen := int64(i + 1)
		if t.long == nil {
			t.cur.noteHead(t.off, t.buf[start:start+i+1])
		}
		start += i + 1
		tooLong := t.long != nil || len(line) > ingest.MaxLineBytes
		if t.long != nil {
			lineLen += int64(len(t.long)) + t.dropped
			line = t.long
			t.long, t.dropped = nil, 0
		} else {
			line = bytes.TrimSuffix(line, []byte{'\r'})
			line = line[:min(len(line), ingest.MaxLineBytes)]
		}
		t.off += lineLen
		if !visit(line, tooLong) {
			return false
		}
	}
}

// keepLong moves the unfinished line at buf[start:] aside when it is
// already longer than ingest.MaxLineBytes: its first MaxLineBytes bytes
// are kept, to be handed out as a too-long line when it ends, and the rest
// is only counted, so that no line holds more memory than that.
func (t *tailer) keepLong(start int) {
	rest := t.buf[start:]
	if t.long == nil && len(rest) <= ingest.MaxLineBytes {
		return
	}
	if t.long == nil {
		t.long = bytes.Clone(rest[:ingest.MaxLineBytes])
		rest = rest[ingest.MaxLineBytes:]
	}
	t.dropped += int64(len(rest))
	t.buf = t.buf[:start]
}

// readPos is the offset in cur up to which t has read.
func (t *tailer) readPos() int64 {
	return t.off + int64(len(t.long)) + t.dropped + int64(len(t.buf))
}

// atEnd looks at the file when all of cur has been read: whether it was
// truncated, or rotated and done with. It reports whether t moved to
// another file. A rotated file that is done and ends without a newline
// hands its last piece to visit as a line.
func (t *tailer) atEnd(visit func([]byte, bool) bool) (bool, error) {
	size, err := t.cur.size()
	if err != nil {
		return false, err
	}
	if !t.copy && (size < t.readPos() || t.cur.headChanged()) {
		p := t.position()
		live := t.cur
		t.cur = nil
		return true, t.afterTruncation(live, p)
	}
	if !t.copy {
		fi, err := os.Stat(t.path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			// Renamed, and nginx has not reopened yet: it still writes to
			// cur. Wait for the new file.
			if !t.waitedFor {
				t.log.Warn("the log is missing: waiting for it to appear", "path", t.path)
				t.waitedFor = true
			}
			return false, nil
		case err != nil:
			return false, err
		}
		t.waitedFor = false
		if dev, ino := identity(fi); dev == t.cur.dev && ino == t.cur.ino {
			return false, nil
		}
		// The path names a new file, but nginx may write to the old one
		// until every worker has reopened: leave it once it has been quiet
		// for the grace period.
		if t.quietSince.IsZero() {
			t.quietSince = t.now()
		}
		if t.now().Sub(t.quietSince) < t.grace {
			return false, nil
		}
	}
	if end := t.readPos(); end > t.off {
		last, tooLong := t.buf, t.long != nil
		if tooLong {
			last = t.long
		}
		t.off = end
		t.buf, t.long, t.dropped = t.buf[:0], nil, 0
		if !visit(last, tooLong) {
			return false, errStop
		}
	}
	return true, t.next()
}

// next leaves cur, done with, for the file that follows it: the live file
// that copytruncate emptied, or else the oldest rotated file newer than
// cur, or else the file at the path. A log rotated twice while the
// follower was behind (renamed, and the new file copied and truncated
// since) is so read file by file, in the order nginx wrote them.
func (t *tailer) next() error {
	t.log.Info("finished a rotated log file", "path", t.cur.path, "bytes", t.off)
	next := t.live
	if next == nil {
		lf, err := t.successor()
		if err != nil {
			return err
		}
		next = lf
	}
	t.cur.close()
	t.cur, t.live, t.off, t.copy, t.quietSince = next, nil, 0, false, time.Time{}
	return nil
}

// successor opens and locks the file that follows cur (see next).
func (t *tailer) successor() (*logFile, error) {
	fi, err := t.cur.f.Stat()
	if err != nil {
		return nil, err
	}
	for _, cand := range oldestFirst(rotated(t.path)) {
		cfi, err := os.Stat(cand)
		if err != nil || !cfi.ModTime().After(fi.ModTime()) {
			continue
		}
		if dev, ino := identity(cfi); dev == t.cur.dev && ino == t.cur.ino {
			continue
		}
		lf, err := openLog(cand)
		if err != nil {
			return nil, err
		}
		t.log.Info("a newer rotated file follows the one finished", "path", cand)
		return lf, nil
	}
	return openLog(t.path)
}
