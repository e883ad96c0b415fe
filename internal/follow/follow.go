// Package follow tails the access log of an nginx edge into the assets
// table, as `cdnapi follow` does: every request the edge logs shows up in
// GET /api/v1/assets within a second, exactly once, whatever happens to
// the processes in between.
//
// Exactly once rests on one transaction: the follower commits its place in
// the log (a cdnapi.LogPosition: which file, by device, inode and
// fingerprint, and the byte offset) together with the rows of the lines
// before it. A follower killed at any moment starts again where the
// committed rows end. The commit is a compare-and-set on the position, so
// two followers of one stream can never both commit the same lines, and a
// follower holds flock(2) on the file it reads, so a second one is refused
// at the start rather than racing.
package follow

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/ingest"
)

// Store is what a follower needs of a cdnapi.Store.
type Store interface {
	cdnapi.Transactor
	ListRegions(ctx context.Context) ([]cdnapi.Region, error)
	LogPosition(ctx context.Context, stream string) (cdnapi.LogPosition, error)
}

// The defaults of Config.
const (
	// DefaultBatchLines is large because a batch is only that large when
	// the follower is behind: a commit writes every page it changed, and
	// the unique index of random request IDs has a changed page for
	// nearly every line, so each commit rewrites much of it; fewer,
	// larger commits catch up faster. BenchmarkThroughput on SQLite, in
	// one run on a loaded machine, follow/ingest: 0.89 at 5,000 lines,
	// 1.00 at 50,000. A live edge's batches are what arrived during the
	// last commit, far smaller.
	DefaultBatchLines    = 50_000
	DefaultBatchInterval = 200 * time.Millisecond
	DefaultPollInterval  = 50 * time.Millisecond
	DefaultRotateGrace   = time.Second
)

// Config says what to follow and how. Zero fields take their defaults.
type Config struct {
	// Path is the log nginx writes, as its access_log names it.
	Path string
	// Stream names the log in the store; the absolute Path by default.
	// Give each edge's log its own.
	Stream string

	// A batch of lines is committed as soon as the log has no more lines
	// ready and the previous commit is done, so a quiet edge's requests
	// show up at once; while commits take longer than lines take to
	// arrive, lines gather into one batch until it holds BatchLines lines
	// or its first line is BatchInterval old, and the reader then waits
	// for the commit.
	BatchLines    int
	BatchInterval time.Duration
	// PollInterval is how often the log is looked at once all of it has
	// been read.
	PollInterval time.Duration
	// RotateGrace is how long a log that was renamed must have been quiet
	// before the follower leaves it for the new file: nginx writes to the
	// old file until each of its workers has reopened the log.
	RotateGrace time.Duration

	// MissingWarnEvery is how often a log that is not there is warned of
	// again while the follower waits for it; a minute by default. One
	// warning at the start scrolls away, and a follower pointed at the
	// wrong path would then wait in silence for ever.
	MissingWarnEvery time.Duration

	// StopAtEnd stops the follower once it has committed all there is,
	// instead of waiting for more: a backfill of a log, or a benchmark. A
	// log that is not there is an error at once: there is nothing to
	// backfill.
	StopAtEnd bool

	// Rejects, when set, receives each invalid line as it was read, with
	// a newline (a line longer than ingest.MaxLineBytes: its first
	// MaxLineBytes bytes). A line is written before the commit of its
	// batch, so after a crash it may be written again; it is never lost.
	Rejects io.Writer

	Metrics *Metrics         // nil records nothing
	Logger  *slog.Logger     // discarded when nil
	Now     func() time.Time // time.Now when nil
}

func (c *Config) defaults() error {
	if c.Path == "" {
		return errors.New("follow: no log to follow")
	}
	abs, err := filepath.Abs(c.Path)
	if err != nil {
		return err
	}
	c.Path = abs
	if c.Stream == "" {
		c.Stream = abs
	}
	if c.BatchLines <= 0 {
		c.BatchLines = DefaultBatchLines
	}
	if c.BatchInterval <= 0 {
		c.BatchInterval = DefaultBatchInterval
	}
	if c.PollInterval <= 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.RotateGrace <= 0 {
		c.RotateGrace = DefaultRotateGrace
	}
	if c.MissingWarnEvery <= 0 {
		c.MissingWarnEvery = time.Minute
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return nil
}

// ErrLocked is Run's error when another follower reads the log.
var ErrLocked = errLocked

// ErrAllRejected is wrapped in Run's error when, with StopAtEnd, the lines
// it committed were all rejected: a log in another format (nginx's default
// combined) is a mistake to say, not a backfill that worked. The error
// says why the first line was rejected.
var ErrAllRejected = errors.New("every line read was rejected")

// Run follows the log until ctx ends (or, with StopAtEnd, until all of it
// is committed). It returns nil then, having committed what it had read.
// It returns an error when it cannot go on: the log is followed by another
// process, or another follower moved the stream's position. A store that
// does not answer is waited for, with backoff, never given up on.
func Run(ctx context.Context, st Store, cfg Config) error {
	if err := cfg.defaults(); err != nil {
		return err
	}
	f := &follower{st: st, cfg: cfg, log: cfg.Logger.With("stream", cfg.Stream)}
	if err := f.run(ctx); err != nil {
		return err
	}
	if cfg.StopAtEnd && f.linesRun > 0 && f.rejectedRun == f.linesRun && ctx.Err() == nil {
		return fmt.Errorf("follow %s: %w: all %d lines; the first: %v", cfg.Path, ErrAllRejected, f.linesRun, f.whyRun)
	}
	return nil
}

type follower struct {
	st  Store
	cfg Config
	log *slog.Logger

	parser      *ingest.EdgeParser
	regionsRead time.Time // when the parser's regions were read

	committing atomic.Bool // the committer is writing a batch

	// What this run committed, for StopAtEnd's verdict: the committer
	// alone writes them.
	linesRun, rejectedRun int64
	whyRun                error // why the first line rejected was
}

func (f *follower) run(ctx context.Context) error {
	var pos cdnapi.LogPosition
	err := f.retry(ctx, "read the committed position", func(ctx context.Context) error {
		p, err := f.st.LogPosition(ctx, f.cfg.Stream)
		if errors.Is(err, cdnapi.ErrNotFound) {
			p, err = cdnapi.LogPosition{}, nil
		}
		pos = p
		return err
	})
	if err != nil {
		return nil // ctx ended
	}
	if err := f.readRegions(ctx); err != nil {
		return nil
	}
	t := &tailer{path: f.cfg.Path, grace: f.cfg.RotateGrace, log: f.log, now: f.cfg.Now}
	if err := f.openLog(ctx, t, pos); err != nil {
		if ctx.Err() != nil {
			return nil // stopped before the log appeared
		}
		return err
	}
	defer t.close()
	f.log.Info("following", "path", f.cfg.Path, "file", t.cur.path, "offset", t.off)
	f.cfg.Metrics.setPosition(pos)

	batches := make(chan *batch)
	readErr := make(chan error, 1)
	readCtx, stopReading := context.WithCancel(ctx)
	defer stopReading()
	go func() { readErr <- f.read(readCtx, t, pos, batches) }()
	err = f.commit(ctx, pos, batches)
	stopReading()
	for range batches { // a committer that gave up: let the reader end
	}
	if rerr := <-readErr; err == nil {
		err = rerr
	}
	return err
}

// openLog positions t at pos, waiting for the log to appear when it does
// not exist yet (nginx not started), and warning again every
// MissingWarnEvery while it waits. Another follower holding it is an error
// at once, and so is a missing log with StopAtEnd.
func (f *follower) openLog(ctx context.Context, t *tailer, pos cdnapi.LogPosition) error {
	start := time.Now()
	var warned time.Time
	for {
		err := t.open(pos)
		if err == nil {
			return nil
		}
		if errors.Is(err, errLocked) || f.cfg.StopAtEnd {
			return fmt.Errorf("follow %s: %w", f.cfg.Path, err)
		}
		switch {
		case warned.IsZero():
			f.log.Warn("cannot open the log yet; retrying", "path", f.cfg.Path, "err", err)
			warned = time.Now()
		case time.Since(warned) >= f.cfg.MissingWarnEvery:
			f.log.Warn("still cannot open the log; retrying", "path", f.cfg.Path, "err", err,
				"waited", time.Since(start).Round(time.Second).String())
			warned = time.Now()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(f.cfg.PollInterval * 4):
		}
	}
}

// readRegions (re)makes the parser from the regions in the store.
func (f *follower) readRegions(ctx context.Context) error {
	return f.retry(ctx, "read the regions", func(ctx context.Context) error {
		regions, err := f.st.ListRegions(ctx)
		if err != nil {
			return err
		}
		f.parser = ingest.NewEdgeParser(regions)
		f.regionsRead = f.cfg.Now()
		return nil
	})
}

// retry runs op until it succeeds or ctx ends, backing off from 100 ms to
// 5 s and logging while it fails. It returns ctx's error when ctx ends.
func (f *follower) retry(ctx context.Context, what string, op func(context.Context) error) error {
	wait := 100 * time.Millisecond
	for failures := 0; ; failures++ {
		opCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := op(opCtx)
		cancel()
		if err == nil {
			if failures > 0 {
				f.log.Info("the store answers again", "op", what, "failures", failures)
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, cdnapi.ErrPositionMoved) {
			return err
		}
		f.cfg.Metrics.storeFailed()
		// Log the first failure and then about every half-minute, not
		// each attempt: an outage is one story, not a flood.
		if failures == 0 || failures%8 == 0 {
			f.log.Warn("the store does not answer; keeping the position and retrying", "op", what, "err", err, "retry_in", wait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(wait*2, 5*time.Second)
	}
}
