// Package logbuf provides a buffered writer for log lines, the way nginx
// buffers its access log: lines collect in a bounded buffer, which is written
// out when it is full, on a timer, and on Close. A busy server then pays for
// one write system call per buffer instead of one per line.
package logbuf

import (
	"io"
	"sync"
	"time"
)

// The defaults of New.
const (
	// DefaultSize is the buffer size: a few hundred access-log lines.
	DefaultSize = 64 << 10
	// DefaultInterval is the longest a line waits in the buffer.
	DefaultInterval = time.Second
)

// Writer is an io.Writer that buffers what is written to it and passes it on
// to the underlying writer in large writes. It is safe for concurrent use.
//
// Each Write is passed on whole, in one piece and in order, never split
// across two writes of the underlying writer, so a line written in one Write
// (as slog's handlers do) stays one line even when other writers share the
// underlying file. Nothing is dropped: a Write that does not fit waits while
// the buffer is written out. A line waits at most the flush interval; on a
// crash, the lines of the last interval are lost, on Close none.
type Writer struct {
	mu     sync.Mutex
	out    io.Writer
	buf    []byte
	size   int
	closed bool
	err    error // the last error of the underlying writer, reported once

	stop chan struct{}
	done chan struct{}
}

// New returns a Writer over out with a buffer of size bytes (DefaultSize when
// not positive) that is flushed at least every interval (DefaultInterval
// when not positive). Close it to flush what is left and stop its timer.
func New(out io.Writer, size int, interval time.Duration) *Writer {
	if size <= 0 {
		size = DefaultSize
	}
	if interval <= 0 {
		interval = DefaultInterval
	}
	w := &Writer{
		out:  out,
		buf:  make([]byte, 0, size),
		size: size,
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	go w.flushEvery(interval)
	return w
}

// Write buffers p. It writes the buffer out first when p does not fit, and
// writes p straight through when it is larger than the whole buffer or the
// Writer is closed. It returns an error of the underlying writer, if one
// failed since the last report.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf)+len(p) > w.size {
		w.flushLocked()
	}
	if w.closed || len(p) > w.size {
		if _, err := w.out.Write(p); err != nil && w.err == nil {
			w.err = err
		}
	} else {
		w.buf = append(w.buf, p...)
	}
	err := w.err
	w.err = nil
	return len(p), err
}

// Flush writes out what is buffered.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flushLocked()
	err := w.err
	w.err = nil
	return err
}

// Close flushes the buffer and stops the timer. Writes after Close go straight
// to the underlying writer, so that nothing logged late is lost. It does not
// close the underlying writer.
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	w.mu.Unlock()
	close(w.stop)
	<-w.done
	return w.Flush()
}

func (w *Writer) flushLocked() {
	if len(w.buf) == 0 {
		return
	}
	if _, err := w.out.Write(w.buf); err != nil && w.err == nil {
		w.err = err
	}
	w.buf = w.buf[:0]
}

func (w *Writer) flushEvery(interval time.Duration) {
	defer close(w.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			w.Flush()
		case <-w.stop:
			return
		}
	}
}
