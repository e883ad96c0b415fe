package demo

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/ingest"
)

// SeedOptions says what Seed writes.
type SeedOptions struct {
	Project   string    // the project the files belong to; required
	Files     int       // the number of files to write
	Assets    int       // the number of assets to write
	Seed      int64     // the seed of the generator
	Now       time.Time // the reference time; timestamps fall before it. Required
	BatchSize int       // records per write; ingest.DefaultBatchSize when 0
}

// Seed writes the demo regions, then exactly opts.Files files of
// opts.Project and opts.Assets assets made by NewGenerator(opts.Seed,
// opts.Now), oldest first. Writers replace records with the same ID, and the
// same options always give the same records, so seeding twice with the same
// options leaves the same data as seeding once.
//
// Seed writes through the same path as `cdnapi ingest`: every record passes
// ingest's Validator, and ingest.Loaders batch the writes, generating the
// next batch while the last is written. A record the Validator refuses is a
// bug in the generator; Seed stops with an error that names it.
//
// w is usually the writer of one store transaction (Transactor.Write).
// Each batch is one call of the writer. If a call fails, or ctx ends, Seed
// stops and returns the error; nothing is written then if the caller rolls
// the transaction back.
func Seed(ctx context.Context, w cdnapi.Writer, opts SeedOptions) error {
	switch {
	case opts.Project == "":
		return errors.New("demo: seed needs a project")
	case !cdnapi.ValidProject(opts.Project):
		return fmt.Errorf("demo: project %q: want %s", opts.Project, cdnapi.ProjectRule)
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
	regions := Regions()
	v := ingest.NewValidator(regions)
	if err := load(ctx, v.Region, w.PutRegions, opts.BatchSize, slices.Values(regions)); err != nil {
		return fmt.Errorf("demo: write regions: %w", err)
	}
	g := NewGenerator(opts.Seed, opts.Now)
	if err := load(ctx, v.File, w.PutFiles, opts.BatchSize, g.Files(opts.Project, opts.Files)); err != nil {
		return fmt.Errorf("demo: write files: %w", err)
	}
	if err := load(ctx, v.Asset, w.PutAssets, opts.BatchSize, g.Assets(opts.Assets)); err != nil {
		return fmt.Errorf("demo: write assets: %w", err)
	}
	return nil
}

// load feeds the records of seq to an ingest.Loader that checks them with
// check and writes them with put, size at a time.
func load[T any](ctx context.Context, check func(*T) error, put func(context.Context, []T) error, size int, seq iter.Seq[T]) error {
	l := ingest.NewLoader(ctx, check, put, size)
	n := 0
	for rec := range seq {
		n++
		if err := l.Add(rec); err != nil {
			l.Abort()
			if fe, ok := errors.AsType[*ingest.FieldError](err); ok {
				return fmt.Errorf("generated record %d is invalid: %w", n, fe)
			}
			return err
		}
	}
	return l.Close()
}
