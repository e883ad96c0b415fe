package storetest

import (
	"crypto/sha256"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
)

// RunKeys runs the behaviour suite of cdnapi.KeyStore against the stores
// newStore makes, which must be fresh, empty and migrated, as for Run.
func RunKeys(t *testing.T, newStore func(t *testing.T) cdnapi.KeyStore) {
	tests := []struct {
		name string
		run  func(t *testing.T, s cdnapi.KeyStore)
	}{
		{"RoundTrip", testKeysRoundTrip},
		{"ProjectFilterAndOrder", testKeysOrder},
		{"DuplicateRefused", testKeysDuplicate},
		{"Revoke", testKeysRevoke},
		{"TouchOnlyMovesForward", testKeysTouch},
		{"Scope", testKeysScope},
		{"Region", testKeysRegion},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, newStore(t)) })
	}
}

// Key returns a key fixture: the ID "key_"+name, the hash of "cdk_"+name,
// created at Epoch plus i seconds.
func Key(name, project string, i int) cdnapi.APIKey {
	return cdnapi.APIKey{
		ID:        "key_" + name,
		Hash:      sha256.Sum256([]byte("cdk_" + name)),
		Project:   project,
		CreatedAt: Epoch.Add(time.Duration(i) * time.Second),
	}
}

func createKeys(t *testing.T, s cdnapi.KeyStore, keys ...cdnapi.APIKey) {
	t.Helper()
	for _, k := range keys {
		if err := s.CreateKey(t.Context(), k); err != nil {
			t.Fatalf("CreateKey(%s): %v", k.ID, err)
		}
	}
}

func listKeys(t *testing.T, s cdnapi.KeyStore, project string) []cdnapi.APIKey {
	t.Helper()
	keys, err := s.APIKeys(t.Context(), project)
	if err != nil {
		t.Fatalf("APIKeys(%q): %v", project, err)
	}
	return keys
}

func testKeysRoundTrip(t *testing.T, s cdnapi.KeyStore) {
	if keys := listKeys(t, s, ""); len(keys) != 0 {
		t.Fatalf("an empty store has %d keys", len(keys))
	}
	full := Key("Full1", "alpha", 0)
	full.Label = "CI déploiement ✓"
	full.Prefix = "cdk_Full" // what keys list shows; bare has none, as keys made before it was kept
	full.Scope = cdnapi.ScopeUpload
	full.CreatedAt = Epoch.Add(500 * time.Millisecond) // stored as whole seconds
	full.ExpiresAt = Epoch.Add(24*time.Hour + 900*time.Millisecond)
	full.LastUsed = Epoch.Add(time.Minute)
	full.RevokedAt = Epoch.Add(time.Hour)
	bare := Key("Bare2", "alpha", 1)
	createKeys(t, s, full, bare)

	got := listKeys(t, s, "alpha")
	want := []cdnapi.APIKey{full, bare}
	want[0].CreatedAt = Epoch
	want[0].ExpiresAt = Epoch.Add(24 * time.Hour)
	if len(got) != len(want) {
		t.Fatalf("APIKeys = %d keys, want %d", len(got), len(want))
	}
	for i := range want {
		if !sameKey(got[i], want[i]) {
			t.Errorf("key %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
		for _, tm := range []time.Time{got[i].CreatedAt, got[i].ExpiresAt, got[i].LastUsed, got[i].RevokedAt} {
			if !tm.IsZero() && tm.Location() != time.UTC {
				t.Errorf("key %d: time %v is not UTC", i, tm)
			}
		}
	}
}

func sameKey(a, b cdnapi.APIKey) bool {
	return a.ID == b.ID && a.Hash == b.Hash && a.Prefix == b.Prefix && a.Project == b.Project &&
		a.Scope.OrRead() == b.Scope.OrRead() && a.Region == b.Region && a.Label == b.Label &&
		a.CreatedAt.Equal(b.CreatedAt) && a.ExpiresAt.Equal(b.ExpiresAt) &&
		a.LastUsed.Equal(b.LastUsed) && a.RevokedAt.Equal(b.RevokedAt)
}

func testKeysOrder(t *testing.T, s cdnapi.KeyStore) {
	// Created out of order, and two at one instant, which order by ID.
	createKeys(t, s, Key("c", "beta", 2), Key("b", "alpha", 1), Key("B", "alpha", 1), Key("a", "beta", 0))
	ids := func(keys []cdnapi.APIKey) []string {
		var out []string
		for _, k := range keys {
			out = append(out, k.ID)
		}
		return out
	}
	for _, tt := range []struct {
		project string
		want    []string
	}{
		{"", []string{"key_a", "key_B", "key_b", "key_c"}},
		{"alpha", []string{"key_B", "key_b"}},
		{"beta", []string{"key_a", "key_c"}},
		{"gamma", nil},
	} {
		if got := ids(listKeys(t, s, tt.project)); !equalStrings(got, tt.want) {
			t.Errorf("APIKeys(%q) = %v, want %v", tt.project, got, tt.want)
		}
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func testKeysDuplicate(t *testing.T, s cdnapi.KeyStore) {
	createKeys(t, s, Key("one", "alpha", 0))
	sameID := Key("one", "alpha", 1)
	sameID.Hash = sha256.Sum256([]byte("another"))
	if err := s.CreateKey(t.Context(), sameID); err == nil {
		t.Error("CreateKey with a taken ID succeeded")
	}
	sameHash := Key("two", "beta", 1)
	sameHash.Hash = Key("one", "", 0).Hash
	if err := s.CreateKey(t.Context(), sameHash); err == nil {
		t.Error("CreateKey with a taken hash succeeded")
	}
	if keys := listKeys(t, s, ""); len(keys) != 1 || keys[0].Project != "alpha" {
		t.Errorf("after refused duplicates: %+v", keys)
	}
}

func testKeysRevoke(t *testing.T, s cdnapi.KeyStore) {
	createKeys(t, s, Key("a", "alpha", 0), Key("b", "alpha", 1))
	first := Epoch.Add(time.Hour)
	if err := s.RevokeKey(t.Context(), "key_a", first); err != nil {
		t.Fatalf("RevokeKey: %v", err)
	}
	if err := s.RevokeKey(t.Context(), "key_a", first.Add(time.Hour)); err != nil {
		t.Fatalf("RevokeKey again: %v", err)
	}
	if err := s.RevokeKey(t.Context(), "key_none", first); !errors.Is(err, cdnapi.ErrNotFound) {
		t.Errorf("RevokeKey(unknown) = %v, want ErrNotFound", err)
	}
	keys := listKeys(t, s, "alpha")
	if !keys[0].RevokedAt.Equal(first) || keys[0].Usable(first) {
		t.Errorf("revoked key: RevokedAt %v (want %v), usable %v", keys[0].RevokedAt, first, keys[0].Usable(first))
	}
	if !keys[1].RevokedAt.IsZero() || !keys[1].Usable(first) {
		t.Errorf("the other key was revoked too: %+v", keys[1])
	}
}

func testKeysTouch(t *testing.T, s cdnapi.KeyStore) {
	createKeys(t, s, Key("a", "alpha", 0), Key("b", "alpha", 1))
	t1, t2 := Epoch.Add(time.Minute), Epoch.Add(2*time.Minute)
	if err := s.TouchKeys(t.Context(), nil); err != nil {
		t.Fatalf("TouchKeys(nil): %v", err)
	}
	if err := s.TouchKeys(t.Context(), map[string]time.Time{"key_a": t2, "key_b": t1, "key_none": t1}); err != nil {
		t.Fatalf("TouchKeys: %v", err)
	}
	// Flushes of several processes arrive in any order: an older use
	// never moves LastUsed back. They may also arrive at once.
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if err := s.TouchKeys(t.Context(), map[string]time.Time{"key_a": t1}); err != nil {
				t.Errorf("TouchKeys concurrently: %v", err)
			}
		})
	}
	wg.Wait()
	keys := listKeys(t, s, "")
	if !keys[0].LastUsed.Equal(t2) || !keys[1].LastUsed.Equal(t1) {
		t.Errorf("LastUsed = %v, %v; want %v, %v", keys[0].LastUsed, keys[1].LastUsed, t2, t1)
	}
}

// testKeysScope stores a key of each scope, and one without: each reads
// back with its scope, the one without as read. A scope that is not one of
// the three is refused, whoever forgets to check it before the store.
func testKeysScope(t *testing.T, s cdnapi.KeyStore) {
	read, upload, edge, none := Key("r", "alpha", 0), Key("u", "alpha", 1), Key("e", "alpha", 2), Key("n", "alpha", 3)
	read.Scope, upload.Scope, edge.Scope = cdnapi.ScopeRead, cdnapi.ScopeUpload, cdnapi.ScopeEdge
	createKeys(t, s, read, upload, edge, none)
	bogus := Key("bogus", "alpha", 4)
	bogus.Scope = "admin"
	if err := s.CreateKey(t.Context(), bogus); err == nil {
		t.Error("CreateKey with scope admin succeeded")
	}
	var got []cdnapi.KeyScope
	for _, k := range listKeys(t, s, "alpha") {
		got = append(got, k.Scope)
	}
	want := []cdnapi.KeyScope{cdnapi.ScopeRead, cdnapi.ScopeUpload, cdnapi.ScopeEdge, cdnapi.ScopeRead}
	if len(got) != len(want) {
		t.Fatalf("APIKeys = scopes %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("APIKeys = scopes %q, want %q", got, want)
			break
		}
	}
}

// testKeysRegion stores an edge key bound to a region and keys of no
// region: each reads back with its own. A malformed region is refused by
// the store itself.
func testKeysRegion(t *testing.T, s cdnapi.KeyStore) {
	edge, read := Key("e", "alpha", 0), Key("r", "alpha", 1)
	edge.Scope, edge.Region = cdnapi.ScopeEdge, "FRA1"
	createKeys(t, s, edge, read)
	for _, region := range []string{"fra1", "FRANKFURT", "FR1"} {
		bad := Key("bad"+region, "alpha", 2)
		bad.Scope, bad.Region = cdnapi.ScopeEdge, region
		if err := s.CreateKey(t.Context(), bad); err == nil {
			t.Errorf("CreateKey with region %q succeeded", region)
		}
	}
	got := listKeys(t, s, "alpha")
	if len(got) != 2 || got[0].Region != "FRA1" || got[1].Region != "" {
		t.Fatalf("APIKeys = %+v, want the edge key of FRA1 and a read key of no region", got)
	}
}
