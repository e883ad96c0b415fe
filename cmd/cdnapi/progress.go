package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mattn/go-isatty"

	"github.com/cdnapi/cdnapi/internal/ingest"
)

// progressInterval is how often the live progress line is redrawn.
const progressInterval = 250 * time.Millisecond

// progressLine shows how far an ingest has read. On a terminal it redraws
// one line in place (lines, rate and, when the input size is known, the
// share done and an ETA); elsewhere, such as in a log file, it stays silent
// until the summary. Messages printed through it clear the live line first,
// so the two never garble each other.
type progressLine struct {
	w     io.Writer
	p     *ingest.Progress
	size  int64 // bytes of input, or 0 when unknown
	start time.Time
	live  bool

	mu    sync.Mutex // serialises writes to w
	drawn bool       // a live line is on screen
	stop  chan struct{}
	done  chan struct{}
}

// startProgress starts showing p on w. Call finish when the ingest ends.
func startProgress(w io.Writer, p *ingest.Progress, size int64) *progressLine {
	pl := &progressLine{w: w, p: p, size: size, start: time.Now(), live: isTerminal(w),
		stop: make(chan struct{}), done: make(chan struct{})}
	if !pl.live {
		close(pl.done)
		return pl
	}
	go func() {
		defer close(pl.done)
		t := time.NewTicker(progressInterval)
		defer t.Stop()
		for {
			select {
			case <-pl.stop:
				return
			case now := <-t.C:
				pl.draw(now)
			}
		}
	}()
	return pl
}

// isTerminal reports whether w is a terminal, where a line redrawn in place
// makes sense.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// draw redraws the live line as of now.
func (pl *progressLine) draw(now time.Time) {
	elapsed := now.Sub(pl.start).Seconds()
	lines := pl.p.Lines()
	line := fmt.Sprintf("%s lines  %s lines/s", grouped(lines), grouped(int64(float64(lines)/elapsed)))
	if n := pl.p.Invalid(); n > 0 {
		line += fmt.Sprintf("  %s invalid", grouped(n))
	}
	switch read := pl.p.Bytes(); {
	case pl.size > 0 && read >= pl.size:
		// All read; the last batches are being written, then committed.
		line += "  100%  committing"
	case pl.size > 0 && read > 0:
		done := float64(read) / float64(pl.size)
		eta := time.Duration(elapsed * (1 - done) / done * float64(time.Second))
		line += fmt.Sprintf("  %3.0f%%  ETA %s", 100*done, eta.Round(time.Second))
	}
	pl.mu.Lock()
	defer pl.mu.Unlock()
	fmt.Fprintf(pl.w, "\r\033[K%s", line)
	pl.drawn = true
}

// println prints a message on a line of its own.
func (pl *progressLine) println(msg string) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	pl.clear()
	fmt.Fprintln(pl.w, msg)
}

// clear removes the live line; pl.mu must be held.
func (pl *progressLine) clear() {
	if pl.drawn {
		fmt.Fprint(pl.w, "\r\033[K")
		pl.drawn = false
	}
}

// finish stops the live line and prints summary in its place.
func (pl *progressLine) finish(summary string) {
	if pl.live {
		close(pl.stop)
	}
	<-pl.done
	pl.println(summary)
}

// grouped formats n with thousands separators: 1234567 is "1,234,567".
// counted is n, grouped, and the word for its kind: "1 file", "2 files".
// plural is the word for many, which the singular is without its final s.
func counted(n int64, plural string) string {
	if n == 1 {
		return "1 " + strings.TrimSuffix(plural, "s")
	}
	return grouped(n) + " " + plural
}

func grouped(n int64) string {
	s := strconv.FormatInt(n, 10)
	start := 0
	if n < 0 {
		start = 1
	}
	for i := len(s) - 3; i > start; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
