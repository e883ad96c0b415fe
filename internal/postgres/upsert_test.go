package postgres

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/storetest"
)

// copyBatch returns copyThreshold assets, enough for the COPY path, with
// IDs prefix_0000… and the given path.
func copyBatch(prefix, path string) []cdnapi.Asset {
	batch := make([]cdnapi.Asset, copyThreshold)
	for i := range batch {
		batch[i] = asset(fmt.Sprintf("%s_%04d", prefix, i), "FRA1", t0.Add(time.Duration(i)*time.Second))
		batch[i].Path = path
	}
	return batch
}

// assetPaths returns every asset's path by ID, read on the primary.
func assetPaths(t *testing.T, s *Store) map[string]string {
	t.Helper()
	rows, err := s.primary.Query(t.Context(), `SELECT id, path FROM assets`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	paths := map[string]string{}
	for rows.Next() {
		var id, path string
		if err := rows.Scan(&id, &path); err != nil {
			t.Fatal(err)
		}
		paths[id] = path
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return paths
}

// A COPY batch goes straight into its table when its keys are new, and
// falls back to the upsert, with the same result, when one of them is
// there already (committed by another transaction while the Write runs, at
// the batch's first row or its last), and once the savepoints of a Write
// are used up.
func TestCopyDirectFallsBack(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// before runs inside the Write, before the batch, on another
		// connection.
		before     func(ctx context.Context, s *Store) error
		directLeft int // savepoints left to the Write
		// want: the batch went in with a direct COPY; a key was met.
		wantDirect, wantConflict bool
	}{
		{name: "new keys", directLeft: maxDirectCopies, wantDirect: true},
		{name: "first key exists", before: putAsset("b_0000", t0), directLeft: maxDirectCopies, wantConflict: true},
		{name: "last key exists", before: putAsset(fmt.Sprintf("b_%04d", copyThreshold-1), t0.Add((copyThreshold-1)*time.Second)),
			directLeft: maxDirectCopies, wantConflict: true},
		// An ID at another time is another row of the partitioned table:
		// it is deleted before the COPY, which then meets no key.
		{name: "last ID exists at another time", before: putAsset(fmt.Sprintf("b_%04d", copyThreshold-1), t0.Add(-time.Hour)),
			directLeft: maxDirectCopies, wantDirect: true},
		{name: "no savepoints left", directLeft: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t)
			ctx := t.Context()
			// A row of an earlier Write, which the batch leaves alone.
			if err := storetest.Writer(s).PutAssets(ctx, []cdnapi.Asset{asset("a_0", "FRA1", t0)}); err != nil {
				t.Fatal(err)
			}
			batch := copyBatch("b", "/new")
			var w *batcher
			err := s.batch(ctx, func(b *batcher) error {
				w = b
				w.directLeft = tc.directLeft
				if tc.before != nil {
					if err := tc.before(ctx, s); err != nil {
						return err
					}
				}
				return w.PutAssets(ctx, batch)
			})
			if err != nil {
				t.Fatal(err)
			}
			if direct := w.directLeft < tc.directLeft && !w.conflicted["assets"]; direct != tc.wantDirect {
				t.Errorf("direct COPY = %v, want %v", direct, tc.wantDirect)
			}
			if w.conflicted["assets"] != tc.wantConflict {
				t.Errorf("conflicted = %v, want %v", w.conflicted["assets"], tc.wantConflict)
			}
			want := map[string]string{"a_0": "/a_0"}
			for _, a := range batch {
				want[a.ID] = "/new"
			}
			if got := assetPaths(t, s); !maps.Equal(got, want) {
				t.Errorf("got %d assets, want %d; extra or wrong: %v", len(got), len(want), diff(got, want))
			}
		})
	}
}

// putAsset returns a before of TestCopyDirectFallsBack that commits an
// asset with id on a connection of its own.
func putAsset(id string, at time.Time) func(ctx context.Context, s *Store) error {
	return func(ctx context.Context, s *Store) error {
		_, err := s.primary.Exec(ctx, `INSERT INTO assets (id, created_at, path, bytes, cache_status, region)
			VALUES ($1, $2, '/old', 1, 'HIT', 'FRA1')`, id, at)
		return err
	}
}

// diff returns the keys whose values differ between got and want.
func diff(got, want map[string]string) []string {
	var keys []string
	for k := range maps.Keys(got) {
		if want[k] != got[k] {
			keys = append(keys, k)
		}
	}
	for k := range maps.Keys(want) {
		if _, ok := got[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// Once a batch of a Write has met an existing key, the next batches ask
// before they COPY: a batch of new keys still goes straight in, and one
// with an old key goes to the upsert without a failed COPY.
func TestCopyDirectAsksAfterConflict(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	if err := storetest.Writer(s).PutAssets(ctx, copyBatch("a", "/old")); err != nil {
		t.Fatal(err)
	}
	err := s.batch(ctx, func(w *batcher) error {
		steps := []struct {
			batch     []cdnapi.Asset
			wantSaved int // savepoints opened by the batch
		}{
			{copyBatch("a", "/a2"), 1}, // the failed COPY
			{copyBatch("b", "/b"), 1},  // asked, then COPYed
			{copyBatch("a", "/a3"), 0}, // asked, then upserted
		}
		for i, step := range steps {
			left := w.directLeft
			if err := w.PutAssets(ctx, step.batch); err != nil {
				return err
			}
			if saved := left - w.directLeft; saved != step.wantSaved {
				t.Errorf("batch %d opened %d savepoints, want %d", i, saved, step.wantSaved)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got := assetPaths(t, s)
	if len(got) != 2*copyThreshold || got["a_0000"] != "/a3" || got["b_0000"] != "/b" {
		t.Errorf("got %d assets, a_0000 at %q, b_0000 at %q; want %d, /a3, /b",
			len(got), got["a_0000"], got["b_0000"], 2*copyThreshold)
	}
}
