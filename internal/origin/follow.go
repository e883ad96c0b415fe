package origin

import (
	"context"
	"errors"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// followTick is how often Follow indexes the paths events named: the events
// of one burst (a copy, an unpacked archive) make one transaction.
const followTick = 100 * time.Millisecond

// Follow keeps the list in sync with the tree until ctx ends, and then
// returns nil. It watches every folder of the tree through inotify
// (fsnotify), syncs the whole tree once, then indexes each path an event
// names once the file has settled (see Settle): a file written, replaced or
// removed shows in the list about Settle after its last change. Since
// inotify drops events when its queue overflows, and sees nothing while the
// process is down, the whole tree is synced again at start, after an
// overflow, and every rescan (none if rescan is 0). report, when not nil,
// gets the Result of each pass that changed something, and of the first.
func (s *Syncer) Follow(ctx context.Context, rescan time.Duration, report func(Result)) error {
	w, err := fsnotify.NewBufferedWatcher(4096)
	if err != nil {
		return err
	}
	defer w.Close()
	watch := func(abs string) {
		if err := w.Add(abs); err != nil && !errors.Is(err, os.ErrNotExist) {
			s.o.Warn("cannot watch " + quoteName(s.rel(abs)) + ": " + err.Error())
		}
	}
	if report == nil {
		report = func(Result) {}
	}

	dirty := make(map[string]time.Time) // path → when to look at it
	full := func() error {
		res, pending, err := s.pass(ctx, []string{""}, nil, watch)
		if err != nil {
			return err
		}
		report(res)
		clear(dirty)
		now := time.Now()
		for rel, wait := range pending {
			dirty[rel] = now.Add(wait)
		}
		return nil
	}
	// A pass that fails (the store down, say) is retried as a whole
	// sync: what it had taken from dirty is looked at again that way.
	retry := func(err error) bool {
		if ctx.Err() != nil {
			return false
		}
		s.o.Warn(err.Error() + "; syncing the whole tree again in " + retryDelay.String())
		select {
		case <-ctx.Done():
			return false
		case <-time.After(retryDelay):
			return true
		}
	}
	overflowed := false
	if err := full(); err != nil {
		if !retry(err) {
			return nil
		}
		overflowed = true
	}
	var rescans <-chan time.Time
	if rescan > 0 {
		t := time.NewTicker(rescan)
		defer t.Stop()
		rescans = t.C
	}
	tick := time.NewTicker(followTick)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return errors.New("origin: the watcher stopped")
			}
			rel := s.rel(ev.Name)
			if rel == "" || strings.HasPrefix(rel, "../") || rel == ".." {
				if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
					overflowed = true // the origin itself moved: look again
				}
				continue
			}
			if strings.HasPrefix(path.Base(rel), ".") {
				continue // hidden: an upload not yet renamed into place
			}
			if _, ok := dirty[rel]; !ok {
				dirty[rel] = time.Now()
			}
		case err, ok := <-w.Errors:
			if !ok {
				return errors.New("origin: the watcher stopped")
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				s.o.Warn("inotify dropped events: syncing the whole tree")
				overflowed = true
			} else {
				s.o.Warn("inotify: " + err.Error())
			}
		case <-rescans:
			overflowed = true
		case now := <-tick.C:
			if overflowed {
				overflowed = false
				if err := full(); err != nil {
					if !retry(err) {
						return nil
					}
					overflowed = true
				}
				continue
			}
			if err := s.due(ctx, dirty, now, watch, report); err != nil {
				if !retry(err) {
					return nil
				}
				overflowed = true
			}
		}
	}
}

// due indexes the dirty paths whose time has come.
func (s *Syncer) due(ctx context.Context, dirty map[string]time.Time, now time.Time, watch func(string), report func(Result)) error {
	var roots, paths []string
	for rel, at := range dirty {
		if at.After(now) {
			continue
		}
		delete(dirty, rel)
		fi, err := os.Lstat(filepath.Join(s.root, filepath.FromSlash(rel)))
		if err == nil && fi.IsDir() && classify(path.Base(rel), fi.Mode().Type()) == keep {
			roots = append(roots, rel) // a folder made or moved in: walk it
		} else {
			paths = append(paths, rel)
		}
	}
	if len(roots) == 0 && len(paths) == 0 {
		return nil
	}
	res, pending, err := s.pass(ctx, roots, paths, watch)
	if err != nil {
		return err
	}
	later := time.Now()
	for rel, wait := range pending {
		dirty[rel] = later.Add(wait)
	}
	if res.Written() > 0 {
		report(res)
	}
	return nil
}

// rel is the path of abs from the root, with "/" between names.
func (s *Syncer) rel(abs string) string {
	r, err := filepath.Rel(s.root, abs)
	if err != nil {
		return ".."
	}
	if r == "." {
		return ""
	}
	return filepath.ToSlash(r)
}

// retryDelay is how long Follow waits after a pass failed.
const retryDelay = time.Second
