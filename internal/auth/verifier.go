package auth

import (
	"context"
	"crypto/subtle"
	"encoding/binary"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cdnapi/cdnapi"
)

// DefaultRefreshInterval is how often a Verifier reloads the keys, and so
// the bound within which a key created or revoked anywhere takes effect on
// every process.
const DefaultRefreshInterval = 5 * time.Second

// DefaultTouchInterval is how often last uses are written to the store.
const DefaultTouchInterval = time.Minute

// Source is the part of the store a Verifier reads and writes.
type Source interface {
	APIKeys(ctx context.Context, project string) ([]cdnapi.APIKey, error)
	TouchKeys(ctx context.Context, used map[string]time.Time) error
}

// Config tunes a Verifier. Zero fields take their defaults.
type Config struct {
	RefreshInterval time.Duration // DefaultRefreshInterval
	TouchInterval   time.Duration // DefaultTouchInterval
	Timeout         time.Duration // bound of one store call; default 5 s
	Logger          *slog.Logger  // refresh failures; discarded if nil
}

// Verifier checks API keys against an in-memory snapshot of the store's
// keys. It is safe for concurrent use.
type Verifier struct {
	src  Source
	cfg  Config
	snap atomic.Pointer[snapshot]

	mu      sync.Mutex
	pending map[string]time.Time // last uses not yet written, by key ID
	failing bool                 // the last refresh failed; logged once per outage
}

// snapshot indexes keys by the first 8 bytes of their hash. The full hashes
// are then compared in constant time, so the time a lookup takes tells
// nothing beyond whether some key shares a 64-bit hash prefix. The keys
// verified since the snapshot was made are remembered in seen.
type snapshot struct {
	byHash map[uint64][]*entry
	seen   seenKeys
}

type entry struct {
	key      cdnapi.APIKey
	lastUsed atomic.Int64 // unix minute of the last use recorded
}

// New returns a Verifier of the keys in src. It knows no key until Refresh
// has succeeded once.
func New(src Source, cfg Config) *Verifier {
	if cfg.RefreshInterval <= 0 {
		cfg.RefreshInterval = DefaultRefreshInterval
	}
	if cfg.TouchInterval <= 0 {
		cfg.TouchInterval = DefaultTouchInterval
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	v := &Verifier{src: src, cfg: cfg, pending: map[string]time.Time{}}
	v.snap.Store(newSnapshot(nil))
	return v
}

// Refresh reloads every key from the store. On failure the previous
// snapshot stays in force.
func (v *Verifier) Refresh(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, v.cfg.Timeout)
	defer cancel()
	keys, err := v.src.APIKeys(ctx, "")
	if err != nil {
		return err
	}
	v.snap.Store(newSnapshot(keys))
	return nil
}

// newSnapshot indexes keys. It starts with no key seen, so that a key
// revoked in the store is forgotten with the snapshot that held it.
func newSnapshot(keys []cdnapi.APIKey) *snapshot {
	snap := &snapshot{byHash: make(map[uint64][]*entry, len(keys))}
	for _, k := range keys {
		e := &entry{key: k}
		if !k.LastUsed.IsZero() {
			e.lastUsed.Store(k.LastUsed.Unix() / 60)
		}
		p := prefix(k.Hash)
		snap.byHash[p] = append(snap.byHash[p], e)
	}
	return snap
}

// Run refreshes the snapshot every RefreshInterval and writes last uses
// every TouchInterval until ctx ends, then writes the last ones.
func (v *Verifier) Run(ctx context.Context) {
	refresh := time.NewTicker(v.cfg.RefreshInterval)
	defer refresh.Stop()
	touch := time.NewTicker(v.cfg.TouchInterval)
	defer touch.Stop()
	for {
		select {
		case <-ctx.Done():
			v.Flush(context.WithoutCancel(ctx))
			return
		case <-refresh.C:
			err := v.Refresh(ctx)
			v.mu.Lock()
			was := v.failing
			v.failing = err != nil
			v.mu.Unlock()
			switch {
			case err != nil && !was && ctx.Err() == nil:
				v.cfg.Logger.Warn("auth: cannot reload API keys; serving the last ones known until the store answers", "err", err)
			case err == nil && was:
				v.cfg.Logger.Info("auth: API keys reloaded again")
			}
		case <-touch.C:
			v.Flush(ctx)
		}
	}
}

// Verify returns the identity of key (its ID, project, scope and region) when it
// is a known key, neither revoked nor expired at now, the time of the
// request. A key stored without a scope is a read key. It never does I/O.
func (v *Verifier) Verify(key string, now time.Time) (cdnapi.KeyIdentity, bool) {
	snap := v.snap.Load()
	found := snap.seen.lookup(key) // a key seen is well formed
	if found == nil {
		if !WellFormed(key) {
			return cdnapi.KeyIdentity{}, false
		}
		h := Hash(key)
		for _, e := range snap.byHash[prefix(h)] {
			if subtle.ConstantTimeCompare(e.key.Hash[:], h[:]) == 1 {
				found = e
			}
		}
		if found == nil {
			return cdnapi.KeyIdentity{}, false
		}
		snap.seen.add(key, found)
	}
	if !found.key.Usable(now) {
		return cdnapi.KeyIdentity{}, false
	}
	v.recordUse(found, now)
	return cdnapi.KeyIdentity{ID: found.key.ID, Project: found.key.Project, Scope: found.key.Scope.OrRead(), Region: found.key.Region}, true
}

// recordUse notes a use of e, at most once per key and minute, so that the
// lock is taken once a minute per key, not once a request.
func (v *Verifier) recordUse(e *entry, now time.Time) {
	minute := now.Unix() / 60
	last := e.lastUsed.Load()
	if last >= minute || !e.lastUsed.CompareAndSwap(last, minute) {
		return
	}
	// The minute, but never before the key was created: a key used in the
	// minute it was made must not read as used before it existed.
	at := time.Unix(minute*60, 0).UTC()
	if at.Before(e.key.CreatedAt) {
		at = e.key.CreatedAt
	}
	v.mu.Lock()
	v.pending[e.key.ID] = at
	v.mu.Unlock()
}

// Flush writes the last uses recorded since the previous flush. Those it
// cannot write are kept for the next one.
func (v *Verifier) Flush(ctx context.Context) {
	v.mu.Lock()
	batch := v.pending
	v.pending = map[string]time.Time{}
	v.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, v.cfg.Timeout)
	defer cancel()
	if err := v.src.TouchKeys(ctx, batch); err != nil {
		v.cfg.Logger.Warn("auth: cannot record when API keys were last used; retrying later", "keys", len(batch), "err", err)
		v.mu.Lock()
		for id, at := range batch {
			if at.After(v.pending[id]) {
				v.pending[id] = at
			}
		}
		v.mu.Unlock()
	}
}

// pendingUses returns a copy of the last uses not yet written, for tests.
func (v *Verifier) pendingUses() map[string]time.Time {
	v.mu.Lock()
	defer v.mu.Unlock()
	return maps.Clone(v.pending)
}

func prefix(h [32]byte) uint64 { return binary.BigEndian.Uint64(h[:8]) }
