package auth

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/teststore"
)

func TestNewKey(t *testing.T) {
	now := time.Date(2026, 11, 20, 12, 0, 0, 700_000_000, time.UTC)
	seen := map[string]bool{}
	for range 1000 {
		key, rec := NewKey("alpha", cdnapi.ScopeUpload, "ci", now, now.Add(time.Hour))
		if !WellFormed(key) || len(key) != 36 || !strings.HasPrefix(rec.ID, IDPrefix) {
			t.Fatalf("NewKey = %q, %q: malformed", key, rec.ID)
		}
		if rec.Hash != Hash(key) || rec.Project != "alpha" || rec.Scope != cdnapi.ScopeUpload || rec.Label != "ci" || rec.Prefix != key[:len(KeyPrefix)+ShownChars] {
			t.Fatalf("record %+v does not describe key %q", rec, key)
		}
		if !rec.CreatedAt.Equal(now.Truncate(time.Second)) || !rec.ExpiresAt.Equal(now.Add(time.Hour).Truncate(time.Second)) {
			t.Fatalf("times %v, %v not whole seconds of %v", rec.CreatedAt, rec.ExpiresAt, now)
		}
		if seen[key] || seen[rec.ID] {
			t.Fatalf("NewKey repeated %q or %q", key, rec.ID)
		}
		seen[key], seen[rec.ID] = true, true
	}
	_, rec := NewKey("alpha", "", "", now, time.Time{})
	if !rec.ExpiresAt.IsZero() {
		t.Errorf("no expiry gave ExpiresAt %v", rec.ExpiresAt)
	}
	if rec.Scope != cdnapi.ScopeRead {
		t.Errorf("no scope gave Scope %q, want read", rec.Scope)
	}
}

func TestWellFormed(t *testing.T) {
	good, _ := NewKey("p", "", "", time.Now(), time.Time{})
	for _, tt := range []struct {
		key  string
		want bool
	}{
		{good, true},
		{"", false},
		{"cdk_", false},
		{good[:len(good)-1], false},
		{good + "x", false},
		{"CDK_" + good[4:], false},
		{good[:10] + "-" + good[11:], false},
		{good[:10] + "é" + good[12:], false},
	} {
		if got := WellFormed(tt.key); got != tt.want {
			t.Errorf("WellFormed(%q) = %v, want %v", tt.key, got, tt.want)
		}
	}
}

// countingSource counts the calls that reach the real store.
type countingSource struct {
	Source
	lists atomic.Int64
}

func (c *countingSource) APIKeys(ctx context.Context, project string) ([]cdnapi.APIKey, error) {
	c.lists.Add(1)
	return c.Source.APIKeys(ctx, project)
}

// newKey creates a key in st and returns it.
func newKey(t *testing.T, st cdnapi.KeyStore, project string, now, expires time.Time) (string, cdnapi.APIKey) {
	t.Helper()
	return newScopedKey(t, st, project, cdnapi.ScopeRead, now, expires)
}

// newScopedKey creates a key of scope in st and returns it.
func newScopedKey(t *testing.T, st cdnapi.KeyStore, project string, scope cdnapi.KeyScope, now, expires time.Time) (string, cdnapi.APIKey) {
	t.Helper()
	key, rec := NewKey(project, scope, "", now, expires)
	if err := st.CreateKey(t.Context(), rec); err != nil {
		t.Fatal(err)
	}
	return key, rec
}

func TestVerify(t *testing.T) {
	st := teststore.SQLite(t)
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	clock := now
	alpha, alphaRec := newKey(t, st, "alpha", now, time.Time{})
	beta, betaRec := newKey(t, st, "beta", now, now.Add(time.Hour))
	upload, uploadRec := newScopedKey(t, st, "alpha", cdnapi.ScopeUpload, now, time.Time{})
	edge, edgeRec := NewKey("alpha", cdnapi.ScopeEdge, "", now, time.Time{})
	edgeRec.Region = "FRA1"
	if err := st.CreateKey(t.Context(), edgeRec); err != nil {
		t.Fatal(err)
	}
	revoked, revokedRec := newKey(t, st, "alpha", now, time.Time{})
	if err := st.RevokeKey(t.Context(), revokedRec.ID, now); err != nil {
		t.Fatal(err)
	}
	src := &countingSource{Source: st}
	v := New(src, Config{})
	if _, ok := v.Verify(alpha, clock); ok {
		t.Fatal("a key verified before the first refresh")
	}
	if err := v.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	unknown, _ := NewKey("alpha", "", "", now, time.Time{})
	for _, tt := range []struct {
		name, key string
		want      cdnapi.KeyIdentity
	}{
		{"alpha", alpha, cdnapi.KeyIdentity{ID: alphaRec.ID, Project: "alpha", Scope: cdnapi.ScopeRead}},
		{"beta", beta, cdnapi.KeyIdentity{ID: betaRec.ID, Project: "beta", Scope: cdnapi.ScopeRead}},
		{"upload", upload, cdnapi.KeyIdentity{ID: uploadRec.ID, Project: "alpha", Scope: cdnapi.ScopeUpload}},
		{"edge", edge, cdnapi.KeyIdentity{ID: edgeRec.ID, Project: "alpha", Scope: cdnapi.ScopeEdge, Region: "FRA1"}},
		{"revoked", revoked, cdnapi.KeyIdentity{}},
		{"unknown", unknown, cdnapi.KeyIdentity{}},
		{"malformed", "cdk_nope", cdnapi.KeyIdentity{}},
		{"a hash, not a key", string(alphaRec.Hash[:]), cdnapi.KeyIdentity{}},
	} {
		// Twice: the second answer comes from the keys seen.
		for range 2 {
			got, ok := v.Verify(tt.key, clock)
			if got != tt.want || ok != (tt.want.ID != "") {
				t.Errorf("%s: Verify = %+v, %v; want %+v", tt.name, got, ok, tt.want)
			}
		}
	}
	// Expiry is checked against the clock on every request, not at refresh.
	clock = now.Add(time.Hour)
	if _, ok := v.Verify(beta, clock); ok {
		t.Error("an expired key verified")
	}
	// Not one of those requests reached the store.
	if n := src.lists.Load(); n != 1 {
		t.Errorf("the store was read %d times, want once (the refresh)", n)
	}
}

// TestRevocationBound revokes a key through another handle on the store,
// as keys revoke does from another process, and checks that a running
// Verifier refuses it within the documented bound: one RefreshInterval,
// plus the time of one reload.
func TestRevocationBound(t *testing.T) {
	st := teststore.SQLite(t)
	key, rec := newKey(t, st, "alpha", time.Now(), time.Time{})
	const interval = 200 * time.Millisecond
	v := New(st, Config{RefreshInterval: interval, Timeout: time.Second})
	if err := v.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { v.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	if err := st.RevokeKey(t.Context(), rec.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	revoked := time.Now()
	for {
		if _, ok := v.Verify(key, time.Now()); !ok {
			break
		}
		if time.Since(revoked) > interval+time.Second {
			t.Fatalf("the key still verifies %v after its revocation; the bound is %v plus one reload", time.Since(revoked), interval)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("revocation took effect after %v (interval %v)", time.Since(revoked).Round(time.Millisecond), interval)
}

func TestLastUsed(t *testing.T) {
	st := teststore.SQLite(t)
	now := time.Date(2026, 11, 20, 12, 0, 30, 0, time.UTC)
	clock := now
	a, aRec := newKey(t, st, "alpha", now.Add(-time.Hour), time.Time{})
	_, bRec := newKey(t, st, "alpha", now.Add(-time.Hour), time.Time{})
	v := New(st, Config{})
	if err := v.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	for range 100 {
		v.Verify(a, clock)
	}
	minute := now.Truncate(time.Minute)
	if got := v.pendingUses(); len(got) != 1 || !got[aRec.ID].Equal(minute) {
		t.Fatalf("pending uses = %v, want %s at %v", got, aRec.ID, minute)
	}
	v.Flush(t.Context())
	if got := v.pendingUses(); len(got) != 0 {
		t.Fatalf("pending after a flush: %v", got)
	}
	clock = now.Add(10 * time.Second) // the same minute: nothing new to write
	v.Verify(a, clock)
	if got := v.pendingUses(); len(got) != 0 {
		t.Fatalf("a second use in the same minute was recorded: %v", got)
	}
	keys, err := st.APIKeys(t.Context(), "alpha")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		want := time.Time{}
		if k.ID == aRec.ID {
			want = minute
		}
		if !k.LastUsed.Equal(want) {
			t.Errorf("%s: LastUsed %v, want %v (b is %s)", k.ID, k.LastUsed, want, bRec.ID)
		}
	}
}

// A key used in the minute it was created reads as used when it was
// created, not at the start of that minute, before it existed.
func TestLastUsedNotBeforeCreation(t *testing.T) {
	st := teststore.SQLite(t)
	created := time.Date(2026, 11, 20, 10, 30, 45, 0, time.UTC)
	a, aRec := newKey(t, st, "alpha", created, time.Time{})
	v := New(st, Config{})
	if err := v.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	v.Verify(a, created.Add(5*time.Second))
	v.Flush(t.Context())
	keys, err := st.APIKeys(t.Context(), "alpha")
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 || keys[0].ID != aRec.ID || keys[0].LastUsed.Before(keys[0].CreatedAt) {
		t.Fatalf("keys = %+v: last used before created %v", keys, created)
	}
}
