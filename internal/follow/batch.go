package follow

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/ingest"
)

// batch is the lines read since the last commit: the assets of the listed
// ones, the rejected lines, and the position just past the last line.
type batch struct {
	assets  []cdnapi.Asset
	rejects [][]byte
	// rejectBytes is the size of rejects: a batch holds at most
	// maxRejectBytes of them (see read).
	rejectBytes int
	why         error       // why the first of rejects was rejected
	at          []time.Time // when each asset's request was logged, for the delay histogram
	lines       int64
	skipped     int64 // of which refused are nginx's own refusals
	refused     int64
	newest      time.Time // the newest request's time; zero when none
	pos         cdnapi.LogPosition
	started     time.Time // when its first line was read
}

// idleHandoff is the least number of lines for which the reader stops
// reading to hand its batch to a committer that is waiting for one. A live
// edge's lines since the last poll are fewer, and go in one batch. With
// 1,000, PostgreSQL's follower made more, smaller commits, and read at
// 0.80 of ingest's rate; with 5,000 at 0.91 (BenchmarkThroughput).
const idleHandoff = 5000

// maxRejectBytes bounds the rejected lines a batch holds, copied until it
// is committed: a batch of 50,000 lines of 15.6 KB each took the follower
// from 95 to 243 MB. Past it the batch is handed to the committer, as a
// full one is.
const maxRejectBytes = 4 << 20

// regionRefresh is how often, at most, the regions are read again when a
// line names one the follower does not know: it may have been added since.
const regionRefresh = 5 * time.Second

// read reads the log and sends batches until ctx ends, then sends the one
// it holds (so that what was read is committed) and closes out. With
// StopAtEnd it returns once all of the log has been sent.
func (f *follower) read(ctx context.Context, t *tailer, from cdnapi.LogPosition, out chan<- *batch) error {
	defer close(out)
	sent := from
	b := &batch{}
	visit := func(line []byte, tooLong bool) bool {
		f.add(ctx, b, line, tooLong)
		// Behind, the reader would read on until the batch is full while
		// the committer has nothing to do: hand it what there is instead.
		if b.lines >= idleHandoff && !f.committing.Load() {
			return false
		}
		return b.lines < int64(f.cfg.BatchLines) && b.rejectBytes < maxRejectBytes
	}
	for {
		err := t.poll(visit)
		if err != nil && !errors.Is(err, errStop) {
			return fmt.Errorf("follow %s: %w", f.cfg.Path, err)
		}
		b.pos = t.position()
		pending := b.lines > 0 || !samePlace(b.pos, sent)
		full := b.lines >= int64(f.cfg.BatchLines) || b.rejectBytes >= maxRejectBytes
		due := b.lines > 0 && f.cfg.Now().Sub(b.started) >= f.cfg.BatchInterval
		atEnd := err == nil
		switch {
		case !pending:
		case full || due || (atEnd && f.cfg.StopAtEnd) || ctx.Err() != nil:
			out <- b // the committer drains out until it is closed
			sent, b = b.pos, &batch{}
		default:
			select {
			case out <- b:
				sent, b = b.pos, &batch{}
			default: // the committer is busy: gather more
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		if !atEnd {
			continue
		}
		if f.cfg.StopAtEnd && !pending {
			return nil
		}
		select {
		case <-ctx.Done():
		case <-time.After(f.cfg.PollInterval):
		}
	}
}

// reject keeps a copy of line, to write to the rejects file at the commit.
func (b *batch) reject(line []byte) {
	b.rejects = append(b.rejects, bytes.Clone(line))
	b.rejectBytes += len(line)
}

// samePlace reports whether p and q are the same offset of the same file.
func samePlace(p, q cdnapi.LogPosition) bool { return p.SameFile(q) && p.Offset == q.Offset }

// add parses one line into b.
func (f *follower) add(ctx context.Context, b *batch, line []byte, tooLong bool) {
	if b.lines == 0 {
		b.started = f.cfg.Now()
	}
	b.lines++
	f.cfg.Metrics.lineRead()
	if tooLong {
		// Named in the log like any other rejected line, by its start:
		// the rejects file keeps its first MaxLineBytes.
		if len(b.rejects) == 0 { // one line of the log per batch is enough
			f.log.Warn("rejected a line of the log", "err",
				fmt.Sprintf("the line is longer than %d bytes", ingest.MaxLineBytes), "starts", string(line[:min(len(line), 80)]))
		}
		if b.why == nil {
			b.why = fmt.Errorf("longer than %d bytes", ingest.MaxLineBytes)
		}
		b.reject(line)
		return
	}
	req, err := f.parser.Parse(line)
	if ingest.UnknownRegion(err) && f.cfg.Now().Sub(f.regionsRead) >= regionRefresh {
		// Regions are added with cdnapi ingest regions while edges run:
		// look again before turning the line away. Bounded by ctx.
		if f.readRegions(ctx) == nil {
			req, err = f.parser.Parse(line)
		}
	}
	switch {
	case err != nil:
		if len(b.rejects) == 0 { // one line of the log per batch is enough
			f.log.Warn("rejected a line of the log", "err", err)
		}
		if b.why == nil {
			b.why = err
		}
		b.reject(line)
	case !req.Listed:
		b.skipped++
		if req.RefusedByNginx {
			b.refused++
		}
	default:
		b.assets = append(b.assets, req.Asset)
		b.at = append(b.at, req.At)
		if req.At.After(b.newest) {
			b.newest = req.At
		}
	}
}

// commit writes each batch and moves the position with it, in one
// transaction, until batches is closed or ctx ends.
func (f *follower) commit(ctx context.Context, pos cdnapi.LogPosition, batches <-chan *batch) error {
	for b := range batches {
		f.committing.Store(true)
		if len(b.rejects) > 0 && f.cfg.Rejects != nil {
			for _, line := range b.rejects {
				if _, err := f.cfg.Rejects.Write(append(line, '\n')); err != nil {
					return fmt.Errorf("follow: write a rejected line: %w", err)
				}
			}
		}
		next := b.pos
		next.Stream = f.cfg.Stream
		next.Lines = pos.Lines + b.lines
		next.NewestAt = pos.NewestAt
		if b.newest.After(next.NewestAt) {
			next.NewestAt = b.newest
		}
		start := time.Now()
		err := f.write(ctx, b.assets, pos, next)
		if errors.Is(err, cdnapi.ErrPositionMoved) {
			return fmt.Errorf("follow %s: %w: is another `cdnapi follow` of stream %q running elsewhere?", f.cfg.Path, err, f.cfg.Stream)
		}
		if err != nil {
			// ctx ended while the store did not answer: what was not
			// committed is read again by the next follower.
			for range batches {
			}
			return nil
		}
		f.cfg.Metrics.committed(b, next, time.Since(start), f.cfg.Now())
		f.linesRun += b.lines
		f.rejectedRun += int64(len(b.rejects))
		if f.whyRun == nil {
			f.whyRun = b.why
		}
		if pos.Inode != 0 && !next.SameFile(pos) {
			f.log.Info("following a new file", "file", next.Path, "inode", next.Inode)
		}
		pos = next
		f.committing.Store(false)
	}
	return nil
}

// write commits assets and moves the position from pos to next, in one
// transaction, retrying while the store does not answer. Once ctx has
// ended (a stop), the batches the reader still sends get a few seconds of
// their own, so that a stop keeps what was read when it can.
func (f *follower) write(ctx context.Context, assets []cdnapi.Asset, pos, next cdnapi.LogPosition) error {
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
	}
	return f.retry(ctx, "commit a batch", func(ctx context.Context) error {
		return f.st.Write(ctx, func(w cdnapi.Writer) error {
			if err := w.PutAssets(ctx, assets); err != nil {
				return err
			}
			return w.MoveLogPosition(ctx, pos, next)
		})
	})
}
