package follow_test

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi/internal/follow"
	"github.com/cdnapi/cdnapi/internal/teststore"
)

// lineWriter sends each log line written to it on a channel, and drops
// those that find it full rather than hold the follower up.
type lineWriter chan string

func (w lineWriter) Write(p []byte) (int, error) {
	select {
	case w <- string(p):
	default:
	}
	return len(p), nil
}

// A log that is not there is warned of at once and again while the
// follower waits for it, and it is followed once it appears.
func TestMissingLogWarnedAgain(t *testing.T) {
	st := newStore(t, teststore.Engines[0])
	e := newEdge(t, t.TempDir())
	lines := make(lineWriter, 100)
	cfg := fastConfig(e.path)
	cfg.MissingWarnEvery = 50 * time.Millisecond
	cfg.Logger = slog.New(slog.NewTextHandler(lines, nil))
	run(t, st, cfg)
	for _, want := range []string{`msg="cannot open the log yet; retrying"`, `msg="still cannot open the log; retrying"`} {
		select {
		case l := <-lines:
			if !strings.Contains(l, want) || !strings.Contains(l, "level=WARN") || !strings.Contains(l, e.path) {
				t.Fatalf("log line %q, want a WARN %s naming %s", l, want, e.path)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("no %s within 20 s", want)
		}
	}
	e.log(3)
	waitFor(t, st, 3)
}

// With StopAtEnd (follow --once) a log that is not there is an error at
// once: there is nothing to backfill.
func TestMissingLogStopAtEnd(t *testing.T) {
	st := newStore(t, teststore.Engines[0])
	cfg := fastConfig(filepath.Join(t.TempDir(), "nosuch.log"))
	cfg.StopAtEnd = true
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := follow.Run(ctx, st, cfg); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %v, want one that the log does not exist", err)
	}
}
