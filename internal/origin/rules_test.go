package origin

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
)

func TestID(t *testing.T) {
	long := string(make([]byte, 2000)) // longer than ID's stack buffer
	seen := map[string]string{}
	for _, tc := range []struct{ project, rel string }{
		{"site", "index.html"},
		{"site", "img/index.html"},
		{"other", "index.html"},
		{"site", "docs/Übersicht – café ☕.txt"},
		{"sit", "e\x00index.html"}, // the NUL keeps project and path apart
		{"site", long},
	} {
		id := ID(tc.project, tc.rel)
		sum := sha256.Sum256([]byte(tc.project + "\x00" + tc.rel))
		if want := "fil_" + hex.EncodeToString(sum[:16]); id != want {
			t.Errorf("ID(%q, %q) = %s, want %s", tc.project, tc.rel, id, want)
		}
		if !cdnapi.ValidID(cdnapi.FileIDPrefix, id) {
			t.Errorf("ID(%q, %q) = %s: not a valid file ID", tc.project, tc.rel, id)
		}
		if ID(tc.project, tc.rel) != id {
			t.Errorf("ID(%q, %q) differs between calls", tc.project, tc.rel)
		}
		key := tc.project + "/" + tc.rel
		if other, dup := seen[id]; dup {
			t.Errorf("%q and %q have the same ID", key, other)
		}
		seen[id] = key
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name string
		typ  fs.FileMode
		want skip
	}{
		{"index.html", 0, keep},
		{"img", fs.ModeDir, keep},
		{"annual report 2026.pdf", 0, keep},
		{"café ☕.txt", 0, keep},
		{".hidden", 0, hidden},
		{".git", fs.ModeDir, hidden},
		{".logo.png.Xy12", 0, hidden},
		{"link.html", fs.ModeSymlink, symlink},
		{".link", fs.ModeSymlink, hidden},
		{"pipe", fs.ModeNamedPipe, special},
		{"sock", fs.ModeSocket, special},
		{"dev", fs.ModeDevice, special},
		{"bad-\xff.txt", 0, badName},
		{"bad\nname", 0, badName},
		{"bad\x7fname", 0, badName},
		{"bad\u0085name", 0, badName}, // a C1 control
	} {
		if got := classify(tc.name, tc.typ); got != tc.want {
			t.Errorf("classify(%q, %v) = %d, want %d", tc.name, tc.typ, got, tc.want)
		}
	}
}

func TestSettled(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 500_000_000, time.UTC)
	for _, tc := range []struct {
		mtime time.Time
		ok    bool
		wait  time.Duration
	}{
		{now.Add(-time.Hour), true, 0},
		{now.Add(-Settle), true, 0},
		{now.Add(-Settle + time.Millisecond), false, time.Millisecond},
		{now, false, Settle},
		{now.Add(30 * time.Second), false, Settle + 30*time.Second},
		{now.Add(2 * time.Minute), true, 0}, // set by hand: not a write under way
	} {
		ok, wait := settled(tc.mtime, now)
		if ok != tc.ok || wait != tc.wait {
			t.Errorf("settled(%s) = %v, %s; want %v, %s", tc.mtime, ok, wait, tc.ok, tc.wait)
		}
	}
}

func TestCreatedAt(t *testing.T) {
	for _, tc := range []struct {
		sec  int64
		want string
	}{
		{1764072000, "2025-11-25T12:00:00Z"},
		{-5, "1970-01-01T00:00:00Z"},
		{1 << 40, "9999-12-31T23:59:59Z"},
	} {
		if got := createdAt(tc.sec); cdnapi.Timestamp(got) != tc.want || got.Location() != time.UTC {
			t.Errorf("createdAt(%d) = %s, want %s", tc.sec, got, tc.want)
		}
	}
}
