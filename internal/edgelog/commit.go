package edgelog

import (
	"context"
	"errors"
	"time"

	"github.com/cdnapi/cdnapi"
)

// Batches are committed by one goroutine, which merges the batches that
// arrived during its last commit into one transaction: a commit rewrites
// every page of the index of random request IDs it touches, so fewer,
// larger commits write less, as follow's do when it is behind. Each batch
// is answered once the transaction that holds it has committed; a batch
// whose request ended before its turn is not written, and its sender gets
// its context's error.

// groupLines bounds the lines of one merged commit, so that one
// transaction does not hold SQLite's writer for long.
const groupLines = 50_000

// commitTimeout bounds one merged commit.
const commitTimeout = 30 * time.Second

// pending is a batch waiting for its commit.
type pending struct {
	ctx    context.Context
	assets []cdnapi.Asset
	done   chan error // receives the commit's outcome, once
}

// errClosed is the error of a batch sent after Close.
var errClosed = errors.New("edgelog: the receiver is closed")

// commit queues assets for the committer and waits for their commit.
func (r *Receiver) commit(ctx context.Context, assets []cdnapi.Asset) error {
	r.startOnce.Do(func() { go r.commitLoop() })
	p := &pending{ctx: ctx, assets: assets, done: make(chan error, 1)}
	select {
	case r.queue <- p:
	case <-r.closed:
		return errClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-p.done:
		return err
	case <-ctx.Done():
		// Not acknowledged: the batch may still be committed with its
		// group, and the shipper's retry then writes the same rows.
		return ctx.Err()
	}
}

// commitLoop commits queued batches until Close.
func (r *Receiver) commitLoop() {
	for {
		var group []*pending
		select {
		case p := <-r.queue:
			group = append(group, p)
		case <-r.closed:
			return
		}
		lines := len(group[0].assets)
	gather:
		for lines < groupLines {
			select {
			case p := <-r.queue:
				group = append(group, p)
				lines += len(p.assets)
			default:
				break gather
			}
		}
		r.commitGroup(group)
	}
}

// commitGroup writes the batches of group whose requests still wait, in
// one transaction, and answers each.
func (r *Receiver) commitGroup(group []*pending) {
	var live []*pending
	var assets []cdnapi.Asset
	for _, p := range group {
		if err := p.ctx.Err(); err != nil {
			p.done <- err // the sender gave up: not written, sent again
			continue
		}
		live = append(live, p)
		assets = append(assets, p.assets...)
	}
	if len(live) == 0 {
		return
	}
	// The commit may take as long as its most patient sender waits, and
	// never more than commitTimeout.
	deadline := time.Now().Add(commitTimeout)
	latest := time.Time{}
	for _, p := range live {
		if d, ok := p.ctx.Deadline(); ok && d.After(latest) {
			latest = d
		} else if !ok {
			latest = deadline
		}
	}
	if latest.After(deadline) {
		latest = deadline
	}
	ctx, cancel := context.WithDeadline(context.Background(), latest)
	defer cancel()
	err := r.st.Write(ctx, func(w cdnapi.Writer) error { return w.PutAssets(ctx, assets) })
	for _, p := range live {
		p.done <- err
	}
}

// Close stops the committer once the batch it is writing is answered.
// Receive then fails.
func (r *Receiver) Close() error {
	r.closeOnce.Do(func() { close(r.closed) })
	return nil
}
