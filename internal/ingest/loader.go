package ingest

import (
	"context"
	"errors"
	"sync/atomic"
)

// DefaultBatchSize is the number of records a Loader writes per call when
// none is given. SQLite hardly cares; PostgreSQL copies each batch into a
// staging table and upserts from there, and BenchmarkIngestAssets on the
// 2-core dev box went from about 90,000 lines/s at 4,000 to 110,000–120,000
// at 16,000 and more. Three batches in memory stay near ten megabytes.
const DefaultBatchSize = 16_000

// Loader checks records and writes them in batches. Writing runs on a
// goroutine of its own, so that whoever feeds the Loader (the NDJSON reader,
// the demo generator) prepares the next batch while the store writes the
// last one: on two cores the two halves overlap instead of taking turns.
//
// A Loader is fed from one goroutine. Call Close to write the rest and learn
// the outcome, or Abort to drop it; either must be called before the Writer
// the Loader writes through goes away, for example before the function given
// to a store's Write returns.
type Loader[T any] struct {
	ctx   context.Context
	check func(*T) error
	put   func(context.Context, []T) error
	size  int

	batch   []T
	queue   chan []T // full batches, to the writing goroutine
	free    chan []T // written batches, back for reuse
	done    chan struct{}
	err     error       // the first write error; read after failed or done says so
	failed  atomic.Bool // set once err is
	stop    atomic.Bool // set by Abort: write nothing more
	closed  bool
	written atomic.Int64
}

// NewLoader returns a Loader that checks each record with check and writes
// batches of up to size records (DefaultBatchSize when size ≤ 0) with put,
// under ctx. put may reuse nothing of a batch after it returns; the Loader
// refills it.
func NewLoader[T any](ctx context.Context, check func(*T) error, put func(context.Context, []T) error, size int) *Loader[T] {
	if size <= 0 {
		size = DefaultBatchSize
	}
	l := &Loader[T]{
		ctx:   ctx,
		check: check,
		put:   put,
		size:  size,
		batch: make([]T, 0, size),
		// One batch queued and one being written bound the memory to three
		// batches while still letting the feeder run a batch ahead.
		queue: make(chan []T, 1),
		free:  make(chan []T, 2),
		done:  make(chan struct{}),
	}
	go l.write()
	return l
}

// write is the writing goroutine: it writes each queued batch in turn. After
// a failure, or after Abort, it drains the queue without writing.
func (l *Loader[T]) write() {
	defer close(l.done)
	for b := range l.queue {
		if l.failed.Load() || l.stop.Load() {
			continue
		}
		err := l.ctx.Err()
		if err == nil {
			err = l.put(l.ctx, b)
		}
		if err != nil {
			l.err = err
			l.failed.Store(true) // publishes l.err to Add
			continue
		}
		l.written.Add(int64(len(b)))
		select {
		case l.free <- b[:0]:
		default:
		}
	}
}

// Add checks rec and queues it. When rec is invalid it returns the check's
// error (a *FieldError from a Validator) and queues nothing: the caller
// decides whether that ends the load. Once a write has failed, Add returns
// that failure, so that the caller stops feeding early.
func (l *Loader[T]) Add(rec T) error {
	if l.closed {
		return errors.New("ingest: Add after Close or Abort")
	}
	if err := l.check(&rec); err != nil {
		return err
	}
	if l.failed.Load() {
		return l.err
	}
	l.batch = append(l.batch, rec)
	if len(l.batch) == l.size {
		// The writing goroutine always drains the queue, so this send
		// cannot block for longer than one write.
		l.queue <- l.batch
		select {
		case b := <-l.free:
			l.batch = b
		default:
			l.batch = make([]T, 0, l.size)
		}
	}
	return nil
}

// Close writes the records still queued, waits for every write to finish and
// returns the first write error, or nil when every record added was written.
func (l *Loader[T]) Close() error {
	if l.closed {
		return errors.New("ingest: Close after Close or Abort")
	}
	l.closed = true
	if len(l.batch) > 0 {
		l.queue <- l.batch
	}
	close(l.queue)
	<-l.done
	return l.err
}

// Abort drops the records not yet written and waits for a write under way
// to finish. What was written stays written: Abort is for a load that its
// caller will roll back, or that ends anyway. Abort after Close does
// nothing.
func (l *Loader[T]) Abort() {
	if l.closed {
		return
	}
	l.closed = true
	l.stop.Store(true)
	close(l.queue)
	<-l.done
}

// Written returns the number of records written so far. It is safe to call
// from any goroutine, for progress reports.
func (l *Loader[T]) Written() int64 { return l.written.Load() }
