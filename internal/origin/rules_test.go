package origin

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"slices"
	"strings"
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

// TestKeyOf: the key of an ID of ID's form is what the state is kept by,
// and gives the ID back; any other ID (a file ingested otherwise, in any
// case of hex digits) has none, and is kept apart.
func TestKeyOf(t *testing.T) {
	for _, rel := range []string{"a", "img/logo.png", "日本語/ファイル.txt"} {
		id := ID("site", rel)
		k, ok := keyOf(id)
		if !ok || k.id() != id {
			t.Errorf("keyOf(%q) = %x, %v; want the key of that ID", id, k, ok)
		}
		if k != keyOfFile([]byte("site\x00"+rel)) {
			t.Errorf("the key of %q differs from keyOfFile's", rel)
		}
	}
	upper := "fil_" + strings.ToUpper(ID("site", "a")[4:])
	for _, id := range []string{"", "fil_", "fil_0123", upper, "abc_" + ID("site", "a")[4:], ID("site", "a") + "0", "fil_0123456789abcdef0123456789abcdeg"} {
		if k, ok := keyOf(id); ok {
			t.Errorf("keyOf(%q) = %x, want none", id, k)
		}
	}

	st := newListState()
	st.put(ID("site", "a"), entry{rel: "a"})
	st.put(upper, entry{rel: "a"})
	st.put("fil_ingested", entry{rel: "b"})
	if len(st.byKey) != 1 || len(st.foreign) != 2 {
		t.Fatalf("state holds %d by key and %d apart, want 1 and 2", len(st.byKey), len(st.foreign))
	}
	gone := st.gone(1, func(string) bool { return true })
	slices.Sort(gone)
	if want := []string{upper, ID("site", "a"), "fil_ingested"}; !slices.Equal(gone, want) {
		t.Errorf("gone = %q, want %q", gone, want)
	}
	st.delete(upper)
	st.delete(ID("site", "a"))
	if len(st.byKey) != 0 || len(st.foreign) != 1 {
		t.Errorf("after two deletes, state holds %d by key and %d apart, want 0 and 1", len(st.byKey), len(st.foreign))
	}
}
