// Package txwriter is the part of a storage engine's Write that does not
// depend on the engine: the cdnapi.Writer handed to Write's fn, which keeps
// the promises of that interface whatever writes the rows.
package txwriter

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/cdnapi/cdnapi"
)

// Run calls fn with a cdnapi.Writer that writes through tables, and returns
// fn's error, as it is, once no call of that Writer is running any more.
// The engine commits or rolls back its transaction after Run returns.
//
// The Writer fn gets may be used from any goroutine: it passes one call at a
// time to tables, since a transaction runs one statement at a time. It
// skips empty batches. Once fn has returned, or panicked, every call fails
// with an error that says so, rather than write outside the transaction.
// Its errors name the engine and the batch, as in "sqlite: put 3 files: …".
//
// A MoveLogPosition that fails makes Run fail too, with that error, even
// when fn swallows it and returns nil: the rows of fn cover log lines whose
// position another follower has committed, and committing them would write
// those lines twice. Run also refuses, before tables sees it, a move whose
// position cannot be stored (see checkMove).
//
// tables therefore needs no lock of its own, and may assume a batch holds
// at least one record and a move is well formed.
func Run(engine string, tables cdnapi.Writer, fn func(w cdnapi.Writer) error) (err error) {
	w := &writer{engine: engine, tables: tables}
	defer func() {
		// Also when fn panics: a goroutine fn left running may not write on.
		if moveErr := w.end(); err == nil {
			err = moveErr
		}
	}()
	return fn(w)
}

// errEnded is what a writer's methods return once its Run has returned.
var errEnded = errors.New("the Writer of a Write was used after fn returned")

type writer struct {
	engine string
	mu     sync.Mutex
	ended  bool
	tables cdnapi.Writer
	// moveErr is the error of the first MoveLogPosition that failed; the
	// transaction must not commit after it.
	moveErr error
}

// end marks w ended once no call is running, and returns the error of the
// first move that failed, if any.
func (w *writer) end() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ended = true
	return w.moveErr
}

func (w *writer) PutFiles(ctx context.Context, files []cdnapi.File) error {
	return put(w, ctx, "files", files, w.tables.PutFiles)
}

func (w *writer) PutAssets(ctx context.Context, assets []cdnapi.Asset) error {
	return put(w, ctx, "assets", assets, w.tables.PutAssets)
}

func (w *writer) PutRegions(ctx context.Context, regions []cdnapi.Region) error {
	return put(w, ctx, "regions", regions, w.tables.PutRegions)
}

func (w *writer) DeleteFiles(ctx context.Context, project string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	err := errEnded
	if !w.ended {
		err = w.tables.DeleteFiles(ctx, project, ids)
	}
	if err != nil {
		return fmt.Errorf("%s: delete %d files: %w", w.engine, len(ids), err)
	}
	return nil
}

// put writes records through write, under w's lock.
func put[T any](w *writer, ctx context.Context, what string, records []T, write func(context.Context, []T) error) error {
	if len(records) == 0 {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	err := errEnded
	if !w.ended {
		err = write(ctx, records)
	}
	if err != nil {
		return fmt.Errorf("%s: put %d %s: %w", w.engine, len(records), what, err)
	}
	return nil
}

// MoveLogPosition moves to.Stream's position from from to to (see
// cdnapi.LogPositionWriter), under w's lock.
func (w *writer) MoveLogPosition(ctx context.Context, from, to cdnapi.LogPosition) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	err := errEnded
	if !w.ended {
		if err = checkMove(from, to); err == nil {
			err = w.tables.MoveLogPosition(ctx, from, to)
		}
	}
	if err != nil {
		err = fmt.Errorf("%s: move log position of %s: %w", w.engine, to.Stream, err)
		if w.moveErr == nil {
			w.moveErr = err
		}
		return err
	}
	return nil
}

// checkMove returns an error when to cannot be stored as the position of
// its stream, or from is not a position of that stream: mistakes of the
// caller, which the engines would otherwise meet as a constraint violation
// (that aborts a PostgreSQL transaction) or not at all.
func checkMove(from, to cdnapi.LogPosition) error {
	switch {
	case to.Stream == "":
		return errors.New("the position names no stream")
	case from.Stream != "" && from.Stream != to.Stream:
		return fmt.Errorf("the position moves from stream %s", from.Stream)
	case to.Offset < 0 || to.HeadBytes < 0 || to.Lines < 0:
		return fmt.Errorf("offset %d, head bytes %d and lines %d may not be negative", to.Offset, to.HeadBytes, to.Lines)
	}
	return nil
}
