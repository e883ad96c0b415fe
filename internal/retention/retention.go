// Package retention keeps assets for a limited time. Assets are the
// recently requested ones; once older than the retention period they are
// deleted, a small batch at a time, so that pruning a backlog of millions
// never holds the store's write lock for long. On an engine that keeps
// its assets in partitions by time (cdnapi.AssetPartitioner: PostgreSQL),
// the partitions that expired whole are dropped first, and the coming
// days' partitions are made ahead. Files are never pruned.
package retention

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cdnapi/cdnapi"
)

// Store is what pruning needs of a cdnapi.Store.
type Store interface {
	// DeleteAssetsBefore deletes up to limit assets created before cutoff,
	// oldest first, in one short transaction, and returns how many it
	// deleted.
	DeleteAssetsBefore(ctx context.Context, cutoff time.Time, limit int) (int, error)
}

// The defaults of Options and Config.
const (
	// DefaultBatchSize is the number of assets one transaction deletes:
	// a few milliseconds of work, so a writer waiting behind it (SQLite
	// has one) waits no longer than that.
	DefaultBatchSize = 1000
	// DefaultPause is the rest between two batches, in which other
	// writers get their turn.
	DefaultPause = 20 * time.Millisecond
	// DefaultInterval is how often a Pruner runs.
	DefaultInterval = time.Minute
)

// Options tunes Prune. The zero value means the defaults.
type Options struct {
	BatchSize int           // assets per transaction; DefaultBatchSize when 0
	Pause     time.Duration // rest between batches; DefaultPause when 0
}

// Cutoff returns the creation time before which assets are older than
// retention at now. It is a whole second, like every stored time, so that
// "before the cutoff" means the same on every engine.
func Cutoff(now time.Time, retention time.Duration) time.Time {
	return now.Add(-retention).UTC().Truncate(time.Second)
}

// Result is what one Prune did.
type Result struct {
	// Deleted is how many assets were deleted row by row.
	Deleted int
	// Partitions is how many partitions were dropped whole, on an engine
	// that keeps its assets in partitions by time (cdnapi.AssetPartitioner).
	Partitions int
	// PartitionAssets is the engine's estimate of the assets the dropped
	// partitions held: a DROP counts nothing.
	PartitionAssets int64
}

// Prune deletes every asset created before cutoff. On an engine that keeps
// its assets in partitions by time it first drops each partition that holds
// only assets before cutoff, which costs the same at any size; then it
// deletes the rest (those of the partition that straddles the cutoff, or of
// the one table of an engine without partitions) in batches with a pause
// between them. It stops early, returning what it did so far and the
// error, when a step fails or ctx ends. A partition that could not be
// dropped (its table stayed locked) is an error, after its assets were
// deleted row by row all the same: retention holds either way.
func Prune(ctx context.Context, st Store, cutoff time.Time, opts Options) (Result, error) {
	var r Result
	var dropErr error
	if p, ok := st.(cdnapi.AssetPartitioner); ok {
		r.Partitions, r.PartitionAssets, dropErr = p.DropAssetPartitionsBefore(ctx, cutoff)
		if dropErr != nil {
			dropErr = fmt.Errorf("retention: drop partitions before %s: %w", cutoff.Format(time.RFC3339), dropErr)
			if ctx.Err() != nil {
				return r, dropErr
			}
		}
	}
	n, err := deleteInBatches(ctx, st.DeleteAssetsBefore, cutoff, opts)
	r.Deleted = n
	if err != nil {
		err = fmt.Errorf("retention: delete assets before %s: %w", cutoff.Format(time.RFC3339), err)
	}
	return r, errors.Join(dropErr, err)
}

// deleteInBatches calls del until a batch deletes fewer than the batch
// size, with a pause between batches, and returns how many rows it deleted.
func deleteInBatches(ctx context.Context, del func(ctx context.Context, cutoff time.Time, limit int) (int, error), cutoff time.Time, opts Options) (int, error) {
	if opts.BatchSize <= 0 {
		opts.BatchSize = DefaultBatchSize
	}
	if opts.Pause <= 0 {
		opts.Pause = DefaultPause
	}
	total := 0
	for {
		n, err := del(ctx, cutoff, opts.BatchSize)
		total += n
		if err != nil {
			return total, err
		}
		if n < opts.BatchSize {
			return total, nil // nothing older is left
		}
		select {
		case <-ctx.Done():
			return total, ctx.Err()
		case <-time.After(opts.Pause):
		}
	}
}

// PartitionsAhead is how far ahead of now a Pruner keeps the partitions of
// an engine that has them made: two days, so that a day's partition exists
// a day before its first row, and a Pruner that stops for a day leaves no
// row in the default partition.
const PartitionsAhead = 48 * time.Hour

// MakePartitions makes, on an engine that keeps its assets in partitions by
// time, the partitions from cutoff to PartitionsAhead after now that do not
// exist yet, and returns how many it made. On another engine it does
// nothing.
func MakePartitions(ctx context.Context, st Store, cutoff, now time.Time) (int, error) {
	p, ok := st.(cdnapi.AssetPartitioner)
	if !ok {
		return 0, nil
	}
	n, err := p.MakeAssetPartitions(ctx, cutoff, now.Add(PartitionsAhead))
	if err != nil {
		err = fmt.Errorf("retention: make partitions: %w", err)
	}
	return n, err
}

// Config configures a Pruner.
type Config struct {
	// Retention is how long assets are kept; 0 keeps every asset.
	Retention time.Duration
	// Interval is the time between two runs; DefaultInterval when 0.
	Interval time.Duration
	// Options tunes each run.
	Options Options
	// Logger receives one line per run that deleted something, and errors.
	// slog.Default() when nil.
	Logger *slog.Logger
	// Now returns the current time; time.Now when nil.
	Now func() time.Time
}

// Pruner deletes assets older than its retention period, at start and then
// on an interval, in the background of serve.
type Pruner struct {
	store Store
	cfg   Config
}

// New returns a Pruner of st. A cfg.Retention of 0 keeps every asset: the
// Pruner then only makes the partitions ahead of now, on an engine that has
// them, and deletes nothing. It panics if cfg.Retention is negative.
func New(st Store, cfg Config) *Pruner {
	if cfg.Retention < 0 {
		panic("retention: New with a negative retention")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Pruner{store: st, cfg: cfg}
}

// Run prunes at once, then every interval, until ctx ends. A failed run is
// logged and retried at the next interval: a store that is down now may be
// back by then, and the assets will still be there.
func (p *Pruner) Run(ctx context.Context) {
	t := time.NewTicker(p.cfg.Interval)
	defer t.Stop()
	for {
		p.RunOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// HistoryStore is a Store that also keeps the status history, which a
// Pruner prunes too when its store is one.
type HistoryStore interface {
	// DeleteHistoryBefore deletes up to limit status changes and resolved
	// incidents older than cutoff, and returns how many rows it deleted.
	DeleteHistoryBefore(ctx context.Context, cutoff time.Time, limit int) (int, error)
}

// HistoryRetention is how long the status history is kept: the longest
// uptime window.
const HistoryRetention = cdnapi.UptimeLongWindow

// PruneHistory deletes the status history made before cutoff, in batches
// like Prune, and returns how many rows it deleted.
func PruneHistory(ctx context.Context, st HistoryStore, cutoff time.Time, opts Options) (int, error) {
	n, err := deleteInBatches(ctx, st.DeleteHistoryBefore, cutoff, opts)
	if err != nil {
		err = fmt.Errorf("retention: status history: delete before %s: %w", cutoff.Format(time.RFC3339), err)
	}
	return n, err
}

// RunOnce deletes the assets that are older than the retention period now,
// and the status history older than HistoryRetention when the store keeps
// one, logs what it did, and returns what it did. On an engine that keeps
// its assets in partitions by time, it first makes the partitions from the
// cutoff to PartitionsAhead from now that do not exist yet.
func (p *Pruner) RunOnce(ctx context.Context) Result {
	if p.cfg.Retention == 0 {
		now := p.cfg.Now()
		if n, err := MakePartitions(ctx, p.store, now, now); err != nil && ctx.Err() == nil {
			p.cfg.Logger.Error("making asset partitions failed", "made", n, "err", err)
		} else if n > 0 {
			p.cfg.Logger.Info("made asset partitions", "made", n, "until", now.Add(PartitionsAhead).UTC().Format(time.RFC3339))
		}
		return Result{}
	}
	if h, ok := p.store.(HistoryStore); ok {
		cutoff := Cutoff(p.cfg.Now(), HistoryRetention)
		switch n, err := PruneHistory(ctx, h, cutoff, p.cfg.Options); {
		case err != nil && ctx.Err() == nil:
			p.cfg.Logger.Error("status history pruning failed", "deleted", n, "err", err)
		case n > 0:
			p.cfg.Logger.Info("pruned status history", "deleted", n, "before", cutoff.Format(time.RFC3339))
		}
	}
	now := p.cfg.Now()
	cutoff := Cutoff(now, p.cfg.Retention)
	switch n, err := MakePartitions(ctx, p.store, cutoff, now); {
	case err != nil && ctx.Err() == nil:
		p.cfg.Logger.Error("making asset partitions failed", "made", n, "err", err)
	case n > 0:
		p.cfg.Logger.Info("made asset partitions", "made", n, "until", now.Add(PartitionsAhead).UTC().Format(time.RFC3339))
	}
	start := time.Now()
	r, err := Prune(ctx, p.store, cutoff, p.cfg.Options)
	took := time.Since(start).Round(time.Millisecond).String()
	switch {
	case err != nil && ctx.Err() != nil:
		// Shutting down: not a fault.
		p.cfg.Logger.Info("asset pruning stopped", "deleted", r.Deleted, "partitions_dropped", r.Partitions)
	case err != nil:
		p.cfg.Logger.Error("asset pruning failed", "deleted", r.Deleted, "partitions_dropped", r.Partitions, "err", err)
	case r.Partitions > 0:
		p.cfg.Logger.Info("pruned assets", "deleted", r.Deleted, "partitions_dropped", r.Partitions,
			"partition_assets_estimate", r.PartitionAssets, "before", cutoff.Format(time.RFC3339), "duration", took)
	case r.Deleted > 0:
		p.cfg.Logger.Info("pruned assets", "deleted", r.Deleted, "before", cutoff.Format(time.RFC3339), "duration", took)
	default:
		p.cfg.Logger.Debug("no assets to prune", "before", cutoff.Format(time.RFC3339))
	}
	return r
}
