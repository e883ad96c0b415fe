package follow_test

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cdnapi/cdnapi/internal/teststore"
)

// TestRotatedAwayWhileStopped: rotated while the follower was stopped, and
// the old file is nowhere beside the log (moved away, or truncated with no
// copy): the follower says at ERROR that the lines after its position are
// lost, naming the file and offset, and goes on with the current log from
// its start, each of its lines once.
func TestRotatedAwayWhileStopped(t *testing.T) {
	for _, tc := range []struct {
		name, says string
		rotate     func(t *testing.T, path string)
	}{
		{"moved away", "the file of the committed position is gone", func(t *testing.T, path string) {
			if err := os.Rename(path, filepath.Join(t.TempDir(), "elsewhere.log")); err != nil {
				t.Fatal(err)
			}
		}},
		{"truncated without a copy", "the log was truncated and no copy of it was found", func(t *testing.T, path string) {
			if err := os.Truncate(path, 0); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newStore(t, teststore.Engines[0])
			e := newEdge(t, t.TempDir())
			e.log(10)
			stop := run(t, st, fastConfig(e.path))
			waitFor(t, st, 10)
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			abs, _ := filepath.Abs(e.path)
			at := position(t, st, abs)

			e.log(5) // never read: lost with the file
			tc.rotate(t, e.path)
			e.log(7)

			var logs lockedBuffer
			cfg := fastConfig(e.path)
			cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			stop = run(t, st, cfg)
			ids := waitFor(t, st, 17)
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			for i := range 22 {
				want := 1
				if i >= 10 && i < 15 {
					want = 0
				}
				if n := ids[fmt.Sprintf("ast_%032x", i)]; n != want {
					t.Errorf("request %d listed %d times, want %d", i, n, want)
				}
			}
			log := logs.String()
			if !strings.Contains(log, "level=ERROR") || !strings.Contains(log, tc.says) ||
				!strings.Contains(log, fmt.Sprintf("offset=%d", at.Offset)) || !strings.Contains(log, "lost") {
				t.Errorf("the follower's log does not say at ERROR what is lost after offset %d:\n%s", at.Offset, log)
			}
		})
	}
}
