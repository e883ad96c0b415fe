package demo

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/cdnapi/cdnapi"
)

// Writer is where Seed writes: the write half of cdnapi.Store. Seed reuses
// the slices it passes, so a Writer must not keep them after it returns.
type Writer interface {
	PutRegions(ctx context.Context, regions []cdnapi.Region) error
	PutFiles(ctx context.Context, files []cdnapi.File) error
	PutAssets(ctx context.Context, assets []cdnapi.Asset) error
}

// DefaultBatchSize is the number of records Seed writes per call when
// SeedOptions.BatchSize is not set: large enough that transaction overhead
// vanishes, small enough that a batch stays a few megabytes.
const DefaultBatchSize = 5000

// SeedOptions says what Seed writes.
type SeedOptions struct {
	Project   string    // the project the files belong to; required
	Files     int       // the number of files to write
	Assets    int       // the number of assets to write
	Seed      int64     // the seed of the generator
	Now       time.Time // the reference time; timestamps fall before it. Required
	BatchSize int       // records per write; DefaultBatchSize when 0
}

// Seed writes the demo regions, then exactly opts.Files files of
// opts.Project and opts.Assets assets made by NewGenerator(opts.Seed,
// opts.Now), oldest first. Writers replace records with the same ID, and the same options
// always give the same records, so seeding twice with the same options
// leaves the same data as seeding once.
//
// Each batch is one call of the writer. If a call fails, or ctx ends, Seed
// stops and returns the error; the batches written before stay written.
func Seed(ctx context.Context, w Writer, opts SeedOptions) error {
	switch {
	case opts.Project == "":
		return errors.New("demo: seed needs a project")
	case opts.Files < 0 || opts.Assets < 0:
		return errors.New("demo: the numbers of files and assets must not be negative")
	case opts.Now.IsZero():
		// A default of time.Now would make the output depend on the clock
		// without the caller noticing.
		return errors.New("demo: seed needs a reference time")
	case opts.BatchSize < 0:
		return errors.New("demo: the batch size must not be negative")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	size := opts.BatchSize
	if size == 0 {
		size = DefaultBatchSize
	}
	if err := w.PutRegions(ctx, Regions()); err != nil {
		return fmt.Errorf("demo: write regions: %w", err)
	}
	g := NewGenerator(opts.Seed, opts.Now)
	if err := writeBatches(ctx, g.Files(opts.Project, opts.Files), min(size, opts.Files), w.PutFiles); err != nil {
		return fmt.Errorf("demo: write files: %w", err)
	}
	if err := writeBatches(ctx, g.Assets(opts.Assets), min(size, opts.Assets), w.PutAssets); err != nil {
		return fmt.Errorf("demo: write assets: %w", err)
	}
	return nil
}

// writeBatches writes the records of seq through put, size at a time, in
// one reused slice. It checks ctx before each write, so that a long seed
// stops soon after it is canceled.
func writeBatches[T any](ctx context.Context, seq iter.Seq[T], size int, put func(context.Context, []T) error) error {
	batch := make([]T, 0, size)
	flush := func() error {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := put(ctx, batch)
		batch = batch[:0]
		return err
	}
	for v := range seq {
		batch = append(batch, v)
		if len(batch) == size {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if len(batch) > 0 {
		return flush()
	}
	return nil
}
