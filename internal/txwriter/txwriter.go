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
// tables therefore needs no lock of its own, and may assume a batch holds
// at least one record.
func Run(engine string, tables cdnapi.Writer, fn func(w cdnapi.Writer) error) error {
	w := &writer{engine: engine, tables: tables}
	defer w.end() // also when fn panics: a goroutine fn left running may not write on
	return fn(w)
}

// errEnded is what a writer's methods return once its Run has returned.
var errEnded = errors.New("the Writer of a Write was used after fn returned")

type writer struct {
	engine string
	mu     sync.Mutex
	ended  bool
	tables cdnapi.Writer
}

// end marks w ended once no call is running.
func (w *writer) end() {
	w.mu.Lock()
	w.ended = true
	w.mu.Unlock()
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
