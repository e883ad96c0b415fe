package sqlite

import (
	"bytes"
	"os"
	"testing"

	"github.com/cdnapi/cdnapi"
)

// TestPingNoticesDamagedFile overwrites the pages of a warm store's database
// file on disk, as a failing disk or a stray dd would. The readers' page
// caches still hold the pages they read, and SQLite sees no reason to read
// them again, so a ping that asks a warm reader passes; Ping must read the
// file the way a list does and fail.
func TestPingNoticesDamagedFile(t *testing.T) {
	s, path := openTemp(t, Options{})
	putPlanData(t, s)
	ctx := t.Context()
	for range 3 { // warm every reader that the pool holds
		if _, err := s.ListFiles(ctx, cdnapi.FileQuery{Project: "default", Limit: 20}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("Ping of a sound file: %v", err)
	}
	// Move every page into the main file, so that the WAL holds none of them.
	if _, err := s.write.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		from int64 // the first byte overwritten
	}{
		{"every page but the first", pageSize},
		{"the whole file", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			fi, err := f.Stat()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt(bytes.Repeat([]byte{0x5a}, int(fi.Size()-tc.from)), tc.from); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			if err := s.Ping(ctx); err == nil {
				t.Error("Ping of a damaged file succeeded")
			}
		})
	}
}
