package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/origin"
)

// origin is a command of its own, not `ingest files --from-dir`: ingest
// upserts the records it is given, in one transaction, and never deletes;
// origin sync makes a project's files list what a folder holds, deleting
// what is gone, commits as it goes, and with --follow never stops, as the
// follow command does for an edge's log. "origin sync" leaves room beside it,
// as "regions list" and "keys create" do.
const originSynopsis = `origin sync DIR --project P [--follow] [--rescan D] [--workers N] [--batch-files N] [--db DSN]

Makes the files list of project P what the folder DIR holds, as a web server
serves it: every regular file under DIR is a file whose filename is its path
from DIR ("img/logo.png"), whose bytes are its size, whose checksum is the
SHA-256 of its content, and whose created_at is its modification time. Its id
is derived from P and the path, so a run on an unchanged folder writes
nothing. Files of P that DIR does not hold are deleted from the list: the
project belongs to its origin.

Only files whose size or modification time differ from what the list holds
are read, in parallel (--workers). Names starting with ".", symbolic links,
devices, pipes, sockets and names that are not UTF-8 text are left out. A
file modified less than a second ago is indexed once it has not changed for
a second: upload to a hidden name and rename into place, as rsync does, and
the list never shows a file half-written.

Changes are committed in batches (5,000 files or one second): a reader may
see a run's changes in parts, each file whole; a run killed midway keeps what
it committed, and the next run finishes the rest.

With --follow it then keeps the list in sync through inotify, syncing the
whole folder again every --rescan and whenever inotify drops events.`

// originConfig is what origin's arguments and their CDNAPI_* variables say.
type originConfig struct {
	dir     string // the folder synced
	project string
	follow  bool
	rescan  time.Duration
	workers int
	batch   int
	db      storeFlags
}

// parseOriginConfig parses origin's arguments and checks them.
func parseOriginConfig(env *environment, args []string) (originConfig, error) {
	var c originConfig
	fs := newSubcommandFlagSet("origin", originSynopsis, map[string]string{"sync": originSynopsis}, args, env.stdout)
	c.db = addStoreFlags(fs, bulkWrites)
	fs.StringVar(&c.project, "project", "", "the project whose files DIR holds (required)")
	fs.BoolVar(&c.follow, "follow", false, "keep the list in sync until stopped (inotify, and a full rescan every --rescan)")
	fs.DurationVar(&c.rescan, "rescan", 5*time.Minute, "with --follow: sync the whole folder again this often (0: only at start and after inotify drops events)")
	fs.IntVar(&c.workers, "workers", 0, "files hashed at once (default: the number of CPUs)")
	fs.IntVar(&c.batch, "batch-files", 5000, "commit at the latest when this many files have changed (and at least every second)")
	args, err := parseArgs(fs, args, env.getenv)
	if err != nil {
		return c, err
	}
	if len(args) != 2 || args[0] != "sync" {
		return c, usageError{"origin: want sync DIR (see cdnapi origin --help)"}
	}
	c.dir = args[1]
	if c.project == "" {
		return c, usageError{"origin: --project is required: the project whose files DIR holds (e.g. --project default)"}
	}
	if !cdnapi.ValidProject(c.project) {
		return c, usageError{fmt.Sprintf("origin: --project must be %s", cdnapi.ProjectRule)}
	}
	if c.rescan < 0 || c.workers < 0 || c.batch < 1 {
		return c, usageError{"origin: --rescan and --workers may not be negative, nor --batch-files below 1"}
	}
	return c, nil
}

// runOrigin is the origin command: it syncs the folder once, or with
// --follow until ctx ends.
func runOrigin(ctx context.Context, env *environment, args []string) error {
	cfg, err := parseOriginConfig(env, args)
	if err != nil {
		return err
	}
	st, err := cfg.db.openMigrated(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	var progress origin.Progress
	display := startOriginProgress(env.stderr, &progress)
	s, err := origin.New(st, cfg.dir, origin.Options{Project: cfg.project, Workers: cfg.workers, BatchFiles: cfg.batch,
		Progress: &progress, Warn: display.println})
	if err != nil {
		display.finish("")
		return fmt.Errorf("origin: %w", err)
	}
	if cfg.follow {
		return followOrigin(ctx, s, display, cfg.rescan)
	}
	start := time.Now()
	res, err := s.Sync(ctx)
	display.finish(originSummary(s, res, time.Since(start)))
	if err != nil {
		return fmt.Errorf("origin: %w (what was committed stays; run again to finish)", err)
	}
	return nil
}

// followOrigin keeps the list in sync until ctx ends: the first sync ends
// with its summary, and each one after it with a line of its own.
func followOrigin(ctx context.Context, s *origin.Syncer, display *originProgress, rescan time.Duration) error {
	first := true
	start := time.Now()
	err := s.Follow(ctx, rescan, func(res origin.Result) {
		if first {
			display.finish(originSummary(s, res, time.Since(start)))
			display.println(fmt.Sprintf("following %s (rescan every %s)", s.Root(), rescan))
			first = false
			return
		}
		display.println(fmt.Sprintf("%s  %s written, %s deleted, %s hashed (%s)", time.Now().UTC().Format(time.RFC3339),
			grouped(res.Put), grouped(res.Deleted), grouped(res.Hashed), humanize.IBytes(uint64(res.HashedBytes))))
	})
	if first {
		display.finish("")
	}
	return err
}

// originSummary is the line a sync ends with, such as "synced 100,000 files
// (2.0 GiB) in 3.2s: 100,000 hashed at 667 MiB/s, 100,000 rows written, 0
// deleted".
func originSummary(s *origin.Syncer, res origin.Result, took time.Duration) string {
	rate := float64(res.HashedBytes) / max(took.Seconds(), 1e-9)
	files := "files"
	if res.Files == 1 {
		files = "file"
	}
	line := fmt.Sprintf("synced %s %s in %s: %s unchanged (not read), %s hashed (%s, %s/s), %s rows written, %s deleted",
		grouped(res.Files), files, took.Round(time.Millisecond), grouped(res.Unchanged), grouped(res.Hashed),
		humanize.IBytes(uint64(res.HashedBytes)), humanize.IBytes(uint64(rate)), grouped(res.Put), grouped(res.Deleted))
	sk := &s.Skipped
	if n := sk.Hidden.Load() + sk.Symlinks.Load() + sk.Special.Load() + sk.BadNames.Load(); n > 0 {
		line += fmt.Sprintf("; left out: %d hidden, %d symlinks, %d special, %d bad names",
			sk.Hidden.Load(), sk.Symlinks.Load(), sk.Special.Load(), sk.BadNames.Load())
	}
	if res.Pending > 0 {
		line += fmt.Sprintf("; %s still being written, left as they were", grouped(res.Pending))
	}
	if res.Failed > 0 {
		line += fmt.Sprintf("; %s could not be read, left as they were", grouped(res.Failed))
	}
	if res.Incomplete {
		line += "; some folders could not be read, so nothing was deleted"
	}
	return line
}

// originProgress shows how far a sync has got: on a terminal one line
// redrawn in place (files found, hashed, MB/s, and once the walk is done
// the share of the bytes hashed and an ETA); elsewhere nothing until the
// summary.
type originProgress struct {
	w     io.Writer
	p     *origin.Progress
	start time.Time
	live  bool

	mu       sync.Mutex
	drawn    bool
	stopOnce sync.Once
	stop     chan struct{}
	done     chan struct{}
}

func startOriginProgress(w io.Writer, p *origin.Progress) *originProgress {
	op := &originProgress{w: w, p: p, start: time.Now(), live: isTerminal(w),
		stop: make(chan struct{}), done: make(chan struct{})}
	if !op.live {
		close(op.done)
		return op
	}
	go func() {
		defer close(op.done)
		t := time.NewTicker(progressInterval)
		defer t.Stop()
		for {
			select {
			case <-op.stop:
				return
			case now := <-t.C:
				op.draw(now)
			}
		}
	}()
	return op
}

func (op *originProgress) draw(now time.Time) {
	elapsed := now.Sub(op.start).Seconds()
	hashed, queued := op.p.HashedBytes.Load(), op.p.QueuedBytes.Load()
	rate := float64(hashed) / elapsed
	line := fmt.Sprintf("%s files  %s hashed  %s  %.0f MiB/s", grouped(op.p.Files.Load()), grouped(op.p.Hashed.Load()),
		humanize.IBytes(uint64(hashed)), rate/(1<<20))
	if op.p.WalkDone.Load() && queued > 0 && rate > 0 {
		left := time.Duration(float64(max(queued-hashed, 0)) / rate * float64(time.Second))
		line += fmt.Sprintf("  %3.0f%%  ETA %s", 100*float64(hashed)/float64(queued), left.Round(time.Second))
	}
	op.mu.Lock()
	defer op.mu.Unlock()
	fmt.Fprintf(op.w, "\r\033[K%s", line)
	op.drawn = true
}

// println prints msg on a line of its own, above the live line.
func (op *originProgress) println(msg string) {
	op.mu.Lock()
	defer op.mu.Unlock()
	if op.drawn {
		fmt.Fprint(op.w, "\r\033[K")
		op.drawn = false
	}
	fmt.Fprintln(op.w, msg)
}

// finish stops the live line and prints summary, if any, in its place.
func (op *originProgress) finish(summary string) {
	op.stopOnce.Do(func() {
		if op.live {
			close(op.stop)
		}
	})
	<-op.done
	if summary != "" {
		op.println(summary)
	} else {
		op.mu.Lock()
		if op.drawn {
			fmt.Fprint(op.w, "\r\033[K")
			op.drawn = false
		}
		op.mu.Unlock()
	}
}
