package storetest

import (
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
)

// testFileStamps: FileStamps gives every file of its project once, with its
// ID, filename, size and created_at, and none of another project's; it
// shows a write as soon as it is committed; it calls fn for nothing on an
// empty project, and stops at fn's first error and returns it.
func testFileStamps(t *testing.T, s cdnapi.Store) {
	r, ok := s.(cdnapi.FileStampReader)
	if !ok {
		t.Fatalf("%T does not implement cdnapi.FileStampReader", s)
	}
	stamps := func(project string) map[string]cdnapi.FileStamp {
		t.Helper()
		got := make(map[string]cdnapi.FileStamp)
		err := r.FileStamps(t.Context(), project, func(f cdnapi.FileStamp) error {
			if _, dup := got[f.ID]; dup {
				t.Errorf("FileStamps gave %s twice", f.ID)
			}
			got[f.ID] = f
			return nil
		})
		if err != nil {
			t.Fatalf("FileStamps(%q): %v", project, err)
		}
		return got
	}
	stampsOf := func(files []cdnapi.File) map[string]cdnapi.FileStamp {
		want := make(map[string]cdnapi.FileStamp)
		for _, f := range files {
			want[f.ID] = cdnapi.FileStamp{ID: f.ID, Filename: f.Filename, Bytes: f.Bytes, CreatedAt: f.CreatedAt.Unix()}
		}
		return want
	}

	if got := stamps("default"); len(got) != 0 {
		t.Fatalf("FileStamps of an empty project gave %d files", len(got))
	}
	files := Files(300, "default", 91)
	// The edges of what a file may be: a name in several scripts, the
	// last second the API shows, a size beyond 32 bits, an empty file.
	files[0].Filename = "img/Ünïcødé 日本語 ✓.png"
	files[1].CreatedAt = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
	files[2].Bytes = 1 << 40
	files[3].Bytes = 0
	putFiles(t, s, files)
	putFiles(t, s, Files(40, "other", 92))
	if got, want := stamps("default"), stampsOf(files); !maps.Equal(got, want) {
		t.Fatalf("FileStamps gave %d files, want the %d put:\ngot  %v\nwant %v", len(got), len(want), got, want)
	}

	// A file changed and one deleted show at once.
	files[5].Bytes++
	files[5].CreatedAt = files[5].CreatedAt.Add(time.Hour)
	putFiles(t, s, files[5:6])
	if err := Writer(s).DeleteFiles(t.Context(), "default", []string{files[6].ID}); err != nil {
		t.Fatalf("DeleteFiles: %v", err)
	}
	want := stampsOf(files)
	delete(want, files[6].ID)
	if got := stamps("default"); !maps.Equal(got, want) {
		t.Fatalf("after a change and a deletion, FileStamps gave %d files, want %d:\ngot  %v\nwant %v", len(got), len(want), got, want)
	}

	boom := errors.New("boom")
	calls := 0
	err := r.FileStamps(t.Context(), "default", func(cdnapi.FileStamp) error {
		calls++
		return boom
	})
	if !errors.Is(err, boom) || calls != 1 {
		t.Fatalf("FileStamps with fn failing = %v after %d calls, want boom after 1", err, calls)
	}
	// The store is still usable: the rows of the stopped read were closed.
	if got := stamps("other"); len(got) != 40 {
		t.Fatalf("FileStamps of the other project after a stopped read gave %d files, want 40", len(got))
	}
}
