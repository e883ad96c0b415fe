// Package uploads is the path of a file from the upload server to the
// origin: upload → scan → origin. The upload server (nginx, see
// deploy/nginx/upload.conf) writes each file whole into an uploads root's
// incoming folder; a Gate moves it into staging, has ClamAV's clamd scan it
// there, and then renames it into the origin when clean, or into quarantine
// when infected, telling subscribers (the event file.quarantined). A file
// is never in the origin unscanned: a scan that cannot finish leaves it in
// staging, retried, and a crash leaves it in incoming or staging, never
// half-moved, since every move is a rename within one filesystem.
//
// What the origin holds is listed by internal/origin, as any origin is; the
// Gate only decides what enters it. Every path is resolved beneath the
// tree's folders and through no symbolic link (see Tree).
package uploads

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/clamd"
)

// Scanner scans an open file for viruses: internal/clamd's Client.
type Scanner interface {
	ScanFile(ctx context.Context, f *os.File) (clamd.Result, error)
}

// Recorder records a quarantined file as the event file.quarantined; the
// store (cdnapi.QuarantineRecorder).
type Recorder interface {
	RecordQuarantine(ctx context.Context, id string, q cdnapi.Quarantine) error
}

// The defaults of Options.
const (
	DefaultRetry   = 2 * time.Second
	DefaultRescan  = time.Minute
	DefaultWorkers = 2
	// DefaultScanTimeout is clamd's own bound on a scan (MaxScanTime,
	// 120 s by default), with 30 s more for the wait in its queue and the
	// connection: a scan that clamd would finish, with any verdict, is
	// never cut short by ours.
	DefaultScanTimeout = 150 * time.Second
	// DefaultScanTimeoutPerMiB is added for each MiB of the file: bytes
	// that move before clamd's clock starts (INSTREAM streams the whole
	// file first) or that it reads from disk. 1 s is reading at 1 MiB/s,
	// slower than any disk or link clamd should be on; the upload
	// server's default limit, 100 MiB, gets 100 s more.
	DefaultScanTimeoutPerMiB = time.Second
)

// Options configure a Gate.
type Options struct {
	Scanner  Scanner
	Recorder Recorder
	// Workers is how many files are scanned at once; DefaultWorkers.
	Workers int
	// Retry is how long a file whose scan could not finish waits before
	// it is scanned again; DefaultRetry.
	Retry time.Duration
	// Rescan is how often the whole of incoming and staging is looked at,
	// besides inotify's events, which a full queue can drop;
	// DefaultRescan.
	Rescan time.Duration
	// ScanTimeout, plus ScanTimeoutPerMiB for each MiB of the file (a
	// part counts as a whole), bounds one scan: a clamd that accepts a
	// connection and never answers would otherwise hold a worker for
	// good, and with every worker held nothing is promoted. A scan that
	// times out is a scan that could not finish: the file waits in
	// staging and is retried. DefaultScanTimeout and
	// DefaultScanTimeoutPerMiB when not positive.
	ScanTimeout       time.Duration
	ScanTimeoutPerMiB time.Duration
	// Promoted, when set, is told of each file moved into the origin.
	Promoted func(project, rel string)
	Metrics  *Metrics     // nil records nothing
	Logger   *slog.Logger // discarded if nil
}

// Gate scans what the upload server writes and promotes what is clean.
type Gate struct {
	t *Tree
	o Options

	mu       sync.Mutex
	queued   map[string]bool      // keys ("project/rel") waiting for a worker
	busy     map[string]bool      // keys a worker is handling
	again    map[string]bool      // busy keys to look at once more when done
	retryAt  map[string]time.Time // staged files whose scan failed: not before
	failing  bool                 // scans are failing: logged once per spell
	work     chan string
	rescanCh chan struct{}
}

// New returns a Gate of the tree t. It starts nothing.
func New(t *Tree, o Options) *Gate {
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.Retry <= 0 {
		o.Retry = DefaultRetry
	}
	if o.Rescan <= 0 {
		o.Rescan = DefaultRescan
	}
	if o.ScanTimeout <= 0 {
		o.ScanTimeout = DefaultScanTimeout
	}
	if o.ScanTimeoutPerMiB <= 0 {
		o.ScanTimeoutPerMiB = DefaultScanTimeoutPerMiB
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Gate{t: t, o: o, queued: map[string]bool{}, busy: map[string]bool{}, again: map[string]bool{},
		retryAt: map[string]time.Time{}, work: make(chan string, 1024), rescanCh: make(chan struct{}, 1)}
}

// Outcome is what happened to one upload.
type Outcome int

// The outcomes of handling a file.
const (
	Promoted    Outcome = iota // scanned clean and moved into the origin
	Quarantined                // found infected and moved into quarantine
	Waiting                    // the scan could not finish: left in staging
	Nothing                    // no file there
)

// Handle looks at the upload of project at rel once: a file staged there
// is scanned and moved on, then one waiting in incoming is staged and
// scanned, until neither holds one or a scan cannot finish. It is what the
// workers of Run do; tests call it directly.
func (g *Gate) Handle(ctx context.Context, project, rel string) (Outcome, error) {
	last := Nothing
	for {
		out, err := g.scanStaged(ctx, project, rel)
		if err != nil || out == Waiting {
			return out, err
		}
		if out != Nothing {
			last = out
		}
		staged, err := g.stage(project, rel)
		if err != nil || !staged {
			return last, err
		}
	}
}

// stage moves the file of project at rel from incoming into staging, if one
// is there and staging holds none at that path: renameat2 with
// RENAME_NOREPLACE, so an upload is never lost to another.
func (g *Gate) stage(project, rel string) (bool, error) {
	dir, name := split(project + "/" + rel)
	from, err := beneath(g.t.incoming, dir, unix.O_RDONLY|unix.O_DIRECTORY)
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("incoming %s: %w", dir, err)
	}
	defer unix.Close(from)
	var st unix.Stat_t
	if err := unix.Fstatat(from, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return false, nil
		}
		return false, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return false, nil // a folder, or what the upload server never writes: not an upload
	}
	to, err := makeDirs(g.t.stage, dir, 0o700)
	if err != nil {
		return false, fmt.Errorf("staging %s: %w", dir, err)
	}
	defer unix.Close(to)
	err = unix.Renameat2(from, name, to, name, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EEXIST) || errors.Is(err, unix.ENOENT) {
		return false, nil // staging is busy with this path, or the file is gone
	}
	return err == nil, err
}

// scanStaged scans the staged file of project at rel, if any, and moves it
// into the origin or into quarantine.
func (g *Gate) scanStaged(ctx context.Context, project, rel string) (Outcome, error) {
	dir, name := split(project + "/" + rel)
	sd, err := beneath(g.t.stage, dir, unix.O_RDONLY|unix.O_DIRECTORY)
	if errors.Is(err, unix.ENOENT) {
		return Nothing, nil
	}
	if err != nil {
		return Nothing, fmt.Errorf("staging %s: %w", dir, err)
	}
	defer unix.Close(sd)
	fd, err := unix.Openat(sd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return Nothing, nil
	}
	if err != nil {
		return Nothing, fmt.Errorf("staging %s: %w", rel, err)
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return Nothing, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return Nothing, unix.Unlinkat(sd, name, 0) // only regular files are staged
	}

	res, err := g.scan(ctx, f, st.Size, project, rel)
	if err == nil && changed(fd, &st) {
		// Written to while it was scanned, by something other than the
		// upload server, which renames whole files into place: what was
		// scanned is not what would be promoted.
		err = errors.New("the file changed while it was scanned")
	}
	if err != nil {
		g.scanFailed(project+"/"+rel, err)
		return Waiting, nil
	}
	g.scanOK()
	if res.Infected {
		return Quarantined, g.quarantine(ctx, sd, f, &st, project, rel, res.Signature)
	}
	// The file's time is when it entered the origin: the upload server
	// sets it from the client's Date header, which says nothing true.
	// UTIME_NOW, not a time of ours: it needs only write access to the
	// file (the upload server's, 0664 in the group cdnapi shares, as
	// deploy/nginx/README.md sets it up), where a given time needs its
	// owner.
	now := unix.Timespec{Nsec: unix.UTIME_NOW}
	if err := unix.UtimesNanoAt(sd, name, []unix.Timespec{now, now}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return Nothing, err
	}
	// Group-writable: the upload server deletes from the origin (DELETE).
	od, err := makeDirs(g.t.origin, dir, 0o775)
	if err != nil {
		return Nothing, fmt.Errorf("origin %s: %w", dir, err)
	}
	defer unix.Close(od)
	if err := unix.Renameat(sd, name, od, name); err != nil {
		return Nothing, fmt.Errorf("promote %s: %w", project+"/"+rel, err)
	}
	g.o.Metrics.promoted()
	g.o.Logger.Info("uploads: promoted", "project", project, "path", rel, "bytes", st.Size)
	if g.o.Promoted != nil {
		g.o.Promoted(project, rel)
	}
	return Promoted, nil
}

// scan has the Scanner scan f, of size bytes, within the file's scan
// timeout, and counts the result. A timeout is logged for each file, with
// what it was given: unlike clamd being down, which the first failure of a
// spell tells, it may be one file that clamd cannot finish.
func (g *Gate) scan(ctx context.Context, f *os.File, size int64, project, rel string) (clamd.Result, error) {
	limit := g.scanTimeout(size)
	sctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	start := time.Now()
	res, err := g.o.Scanner.ScanFile(sctx, f)
	timedOut := err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded)
	g.o.Metrics.scanned(res, err, timedOut, time.Since(start))
	if timedOut {
		g.o.Logger.Warn("uploads: a scan timed out; the file waits in staging and is retried",
			"project", project, "path", rel, "bytes", size, "timeout", limit.String())
	}
	return res, err
}

// scanTimeout is how long the scan of a file of size bytes may take.
func (g *Gate) scanTimeout(size int64) time.Duration {
	mib := (size + 1<<20 - 1) >> 20
	return g.o.ScanTimeout + time.Duration(mib)*g.o.ScanTimeoutPerMiB
}

// quarantine records the infected file f, staged in sd, as an event, then
// moves it into quarantine. The event comes first: a crash in between
// records it again, under the same ID, and the store keeps one.
func (g *Gate) quarantine(ctx context.Context, sd int, f *os.File, st *unix.Stat_t, project, rel, signature string) error {
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return err
	}
	q := cdnapi.Quarantine{Project: project, Path: rel, Bytes: st.Size,
		Checksum: "sha256:" + hex.EncodeToString(h.Sum(nil)), Signature: signature, At: time.Now()}
	id := cdnapi.QuarantineEventID(q.Project, q.Path, q.Checksum)
	if err := g.o.Recorder.RecordQuarantine(ctx, id, q); err != nil {
		return fmt.Errorf("record the quarantine of %s: %w", project+"/"+rel, err)
	}
	dir, name := split(project + "/" + rel)
	qd, err := makeDirs(g.t.quarantine, dir, 0o700)
	if err != nil {
		return fmt.Errorf("quarantine %s: %w", dir, err)
	}
	defer unix.Close(qd)
	// One file per quarantine: a later upload found infected at the same
	// path does not replace the evidence of an earlier one.
	kept := fmt.Sprintf("%s.%d.quarantined", name, st.Ctim.Nano())
	if err := unix.Renameat(sd, name, qd, kept); err != nil {
		return fmt.Errorf("quarantine %s: %w", project+"/"+rel, err)
	}
	g.o.Logger.Warn("uploads: infected file quarantined", "project", project, "path", rel,
		"signature", signature, "bytes", st.Size, "checksum", q.Checksum)
	return nil
}

// changed reports whether the file fd is no longer as st says.
func changed(fd int, st *unix.Stat_t) bool {
	var now unix.Stat_t
	return unix.Fstat(fd, &now) != nil || now.Size != st.Size || now.Mtim != st.Mtim || now.Ctim != st.Ctim
}

// scanFailed notes a scan that could not finish; the first of a spell is
// logged.
func (g *Gate) scanFailed(key string, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.retryAt[key] = time.Now().Add(g.o.Retry)
	if !g.failing {
		g.failing = true
		g.o.Logger.Warn("uploads: cannot scan; files wait in staging until the scanner answers", "error", err)
	}
}

func (g *Gate) scanOK() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.failing {
		g.failing = false
		g.o.Logger.Info("uploads: the scanner answers again")
	}
}

// keys returns the key ("project/rel") of every regular file under the
// folder start (absolute) of the tree folder root (absolute), calling onDir,
// when set, with each folder it enters. Folders at the top that are not
// projects' are skipped, and so are hidden names.
func keys(root, start string, onDir func(abs string)) ([]string, error) {
	var out []string
	err := filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p != start && errors.Is(err, fs.ErrNotExist) {
				return nil // removed while the walk ran
			}
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || !strings.Contains(rel, "/") && !cdnapi.ValidProject(rel)) {
				return fs.SkipDir
			}
			if onDir != nil {
				onDir(p)
			}
			return nil
		}
		if d.Type().IsRegular() && strings.Contains(rel, "/") && !strings.HasPrefix(d.Name(), ".") {
			out = append(out, rel)
		}
		return nil
	})
	return out, err
}

// splitKey returns the project and the path of a key.
func splitKey(key string) (project, rel string) {
	project, rel, _ = strings.Cut(key, "/")
	return project, rel
}
