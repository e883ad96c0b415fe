package main

import (
	"context"
	"fmt"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/retention"
)

const pruneSynopsis = `prune --older-than D [--db DSN]

Deletes the assets created more than D ago (a duration such as 168h), in
small batches, and prints how many it deleted. On PostgreSQL it first drops
each day's partition that has expired whole, and makes the partitions due.
Files are never pruned.
serve --asset-retention does the same in the background.`

func runPrune(ctx context.Context, env *environment, args []string) error {
	fs := newFlagSet("prune", pruneSynopsis, env.stdout)
	db := addStoreFlags(fs, bulkWrites)
	olderThan := fs.Duration("older-than", 0, "delete the assets created more than this long ago, such as 168h (required)")
	if err := parseFlags(fs, args, env.getenv); err != nil {
		return err
	}
	if *olderThan <= 0 {
		return usageError{"prune: --older-than must be a positive duration, such as 168h"}
	}
	st, err := db.openMigrated(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	now := time.Now()
	cutoff := retention.Cutoff(now, *olderThan)
	// On PostgreSQL, the partitions a stopped serve did not make are made
	// first, taking their rows out of the default partition.
	if _, err := retention.MakePartitions(ctx, st, cutoff, now); err != nil {
		return fmt.Errorf("prune: %w", err)
	}
	r, err := retention.Prune(ctx, st, cutoff, retention.Options{})
	if err != nil {
		return fmt.Errorf("prune: deleted %d assets and dropped %d partitions, then: %w", r.Deleted, r.Partitions, err)
	}
	if r.Partitions > 0 {
		fmt.Fprintf(env.stdout, "dropped %d partitions of about %d assets, ", r.Partitions, r.PartitionAssets)
	}
	fmt.Fprintf(env.stdout, "deleted %d assets created before %s\n", r.Deleted, cdnapi.Timestamp(cutoff))
	return nil
}
