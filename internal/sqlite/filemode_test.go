package sqlite

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestFilesArePrivate checks that the database, its -wal and -shm files and
// a backup are created readable by their owner only, whatever the umask:
// they hold the cursor secret and the key hashes.
func TestFilesArePrivate(t *testing.T) {
	old := syscall.Umask(0o022) // the usual one, which leaves 0644
	defer syscall.Umask(old)
	s, path := openTemp(t, Options{}) // the migrations write, through the WAL
	backup := filepath.Join(t.TempDir(), "copy.db")
	if _, err := s.Backup(t.Context(), backup); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm", backup} {
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if mode := info.Mode().Perm(); mode != FileMode {
			t.Errorf("%s has mode %o, want %o", filepath.Base(p), mode, FileMode)
		}
	}
}
