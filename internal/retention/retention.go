// Package retention keeps assets for a limited time. Assets are the
// recently requested ones; once older than the retention period they are
// deleted, a small batch at a time, so that pruning a backlog of millions
// never holds the store's write lock for long. Files are never pruned.
package retention

import (
	"context"
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

// Prune deletes every asset created before cutoff, in batches with a pause
// between them, and returns how many it deleted. It stops early, returning
// the count so far and the error, when a batch fails or ctx ends.
func Prune(ctx context.Context, st Store, cutoff time.Time, opts Options) (int, error) {
	if opts.BatchSize <= 0 {
		opts.BatchSize = DefaultBatchSize
	}
	if opts.Pause <= 0 {
		opts.Pause = DefaultPause
	}
	total := 0
	for {
		n, err := st.DeleteAssetsBefore(ctx, cutoff, opts.BatchSize)
		total += n
		if err != nil {
			return total, fmt.Errorf("retention: delete assets before %s: %w", cutoff.Format(time.RFC3339), err)
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

// Config configures a Pruner.
type Config struct {
	// Retention is how long assets are kept; it must be positive.
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

// New returns a Pruner of st. It panics if cfg.Retention is not positive:
// a retention of 0 means keeping everything, which is running no Pruner.
func New(st Store, cfg Config) *Pruner {
	if cfg.Retention <= 0 {
		panic("retention: New with a retention that is not positive")
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
	n, err := Prune(ctx, historyAsAssets{st}, cutoff, opts)
	if err != nil {
		err = fmt.Errorf("retention: status history: %w", err)
	}
	return n, err
}

// historyAsAssets lets Prune's batching run over the history.
type historyAsAssets struct{ h HistoryStore }

func (a historyAsAssets) DeleteAssetsBefore(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	return a.h.DeleteHistoryBefore(ctx, cutoff, limit)
}

// RunOnce deletes the assets that are older than the retention period now,
// and the status history older than HistoryRetention when the store keeps
// one, logs what it did, and returns how many assets it deleted.
func (p *Pruner) RunOnce(ctx context.Context) int {
	if h, ok := p.store.(HistoryStore); ok {
		cutoff := Cutoff(p.cfg.Now(), HistoryRetention)
		switch n, err := PruneHistory(ctx, h, cutoff, p.cfg.Options); {
		case err != nil && ctx.Err() == nil:
			p.cfg.Logger.Error("status history pruning failed", "deleted", n, "err", err)
		case n > 0:
			p.cfg.Logger.Info("pruned status history", "deleted", n, "before", cutoff.Format(time.RFC3339))
		}
	}
	cutoff := Cutoff(p.cfg.Now(), p.cfg.Retention)
	start := time.Now()
	n, err := Prune(ctx, p.store, cutoff, p.cfg.Options)
	switch {
	case err != nil && ctx.Err() != nil:
		// Shutting down: not a fault.
		p.cfg.Logger.Info("asset pruning stopped", "deleted", n)
	case err != nil:
		p.cfg.Logger.Error("asset pruning failed", "deleted", n, "err", err)
	case n > 0:
		p.cfg.Logger.Info("pruned assets", "deleted", n, "before", cutoff.Format(time.RFC3339),
			"duration", time.Since(start).Round(time.Millisecond).String())
	default:
		p.cfg.Logger.Debug("no assets to prune", "before", cutoff.Format(time.RFC3339))
	}
	return n
}
