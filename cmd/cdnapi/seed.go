package main

import (
	"context"
	"fmt"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/demo"
)

func runSeed(ctx context.Context, env *environment, args []string) error {
	fs := newFlagSet("seed", "seed [--db DSN] --files N --assets M [--seed S]", env.stdout)
	var (
		project = fs.String("project", "default", "project the files are written into")
		files   = fs.Int("files", 0, "number of files to write")
		assets  = fs.Int("assets", 0, "number of assets to write")
		seed    = fs.Int64("seed", 1, "seed of the generator: the same seed and --now write the same data")
		now     = fs.String("now", "", "RFC 3339 time the data ends at (default: the start of the current UTC hour)")
	)
	db := addStoreFlags(fs, bulkWrites)
	if err := parseFlags(fs, args, env.getenv); err != nil {
		return err
	}
	if *files < 0 || *assets < 0 {
		return usageError{"seed: --files and --assets must not be negative"}
	}
	// The default anchor moves once an hour, not once a second, so that
	// seeding twice in a row with one seed writes identical rows.
	end := time.Now().UTC().Truncate(time.Hour)
	if *now != "" {
		t, err := time.Parse(time.RFC3339, *now)
		if err != nil {
			return usageError{fmt.Sprintf("seed: --now must be an RFC 3339 time such as 2026-11-20T14:00:00Z, not %q", *now)}
		}
		end = t.UTC()
	}
	st, err := db.createMigrated(ctx, func(path string) { fmt.Fprintf(env.stdout, "created %s\n", path) })
	if err != nil {
		return err
	}
	defer st.Close()
	start := time.Now()
	opts := demo.SeedOptions{Project: *project, Files: *files, Assets: *assets, Seed: *seed, Now: end}
	if err := st.Write(ctx, func(w cdnapi.Writer) error {
		// One transaction: a seed that is stopped half-way leaves nothing.
		return demo.Seed(ctx, w, opts)
	}); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	fmt.Fprintf(env.stdout, "wrote %d regions, %d files and %d assets in %s\n",
		len(demo.Regions()), *files, *assets, time.Since(start).Round(time.Millisecond))
	return nil
}
