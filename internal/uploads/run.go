package uploads

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/cdnapi/cdnapi"
)

// retryTick is how often the files whose scan failed are looked at for a
// retry that is due.
const retryTick = 250 * time.Millisecond

// Run scans and promotes until ctx ends, then returns nil once its workers
// have stopped. It looks at all of staging and incoming at start (what a
// crash or a stop left), then at each file inotify says the upload server
// renamed into incoming, and at all again every Rescan.
func (g *Gate) Run(ctx context.Context) error {
	w, err := fsnotify.NewBufferedWatcher(4096)
	if err != nil {
		return err
	}
	defer w.Close()
	incoming := filepath.Join(g.t.root, Incoming)
	watch := func(abs string) {
		if err := w.Add(abs); err != nil && !errors.Is(err, os.ErrNotExist) {
			g.o.Logger.Warn("uploads: cannot watch a folder; it is looked at every rescan", "folder", abs, "error", err)
		}
	}

	var workers sync.WaitGroup
	for range g.o.Workers {
		workers.Go(func() { g.worker(ctx) })
	}
	defer workers.Wait()

	g.rescan(ctx, watch)
	rescan := time.NewTicker(g.o.Rescan)
	defer rescan.Stop()
	retry := time.NewTicker(retryTick)
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return errors.New("uploads: the watcher stopped")
			}
			rel, err := filepath.Rel(incoming, ev.Name)
			if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
				continue
			}
			if ev.Has(fsnotify.Create) {
				if fi, err := os.Lstat(ev.Name); err == nil && fi.IsDir() {
					// A new folder: watch it, then look at what it
					// already holds, written before the watch began.
					g.rescanDir(ctx, ev.Name, watch)
					continue
				}
			}
			if ev.Has(fsnotify.Create) || ev.Has(fsnotify.Write) {
				rel = filepath.ToSlash(rel)
				if p, r := splitKey(rel); r != "" && !hiddenPath(r) && cdnapi.ValidProject(p) {
					g.enqueue(ctx, rel)
				}
			}
		case err := <-w.Errors:
			// An overflow loses events: look at everything again.
			g.o.Logger.Warn("uploads: inotify lost events; looking at every upload again", "error", err)
			g.rescan(ctx, watch)
		case <-rescan.C:
			g.rescan(ctx, watch)
		case <-retry.C:
			g.retryDue(ctx)
		}
	}
}

// worker handles keys until ctx ends.
func (g *Gate) worker(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case key := <-g.work:
			g.mu.Lock()
			delete(g.queued, key)
			g.busy[key] = true
			g.mu.Unlock()
			for {
				project, rel := splitKey(key)
				out, err := g.Handle(ctx, project, rel)
				if err != nil && ctx.Err() == nil {
					g.o.Logger.Error("uploads: cannot move an upload on; it waits for the next rescan",
						"project", project, "path", rel, "error", err)
				}
				g.mu.Lock()
				if out != Waiting {
					delete(g.retryAt, key)
				}
				again := g.again[key] && out != Waiting
				delete(g.again, key)
				if !again {
					delete(g.busy, key)
				}
				g.mu.Unlock()
				if !again {
					break
				}
			}
		}
	}
}

// enqueue hands key to the workers, once: a key already queued is not
// queued twice, and one being handled is looked at again when done.
func (g *Gate) enqueue(ctx context.Context, key string) {
	g.mu.Lock()
	switch {
	case g.busy[key]:
		g.again[key] = true
		g.mu.Unlock()
		return
	case g.queued[key]:
		g.mu.Unlock()
		return
	}
	g.queued[key] = true
	g.mu.Unlock()
	select {
	case g.work <- key:
	case <-ctx.Done():
	}
}

// rescan queues every file of staging and incoming, staging first, and
// watches every folder of incoming.
func (g *Gate) rescan(ctx context.Context, watch func(string)) {
	staging := filepath.Join(g.t.root, Staging)
	staged, err := keys(staging, staging, nil)
	if err != nil {
		g.o.Logger.Warn("uploads: cannot read staging", "error", err)
	}
	g.mu.Lock()
	due := staged[:0]
	now := time.Now()
	for _, k := range staged {
		if at, ok := g.retryAt[k]; !ok || !now.Before(at) {
			due = append(due, k)
		}
	}
	g.mu.Unlock()
	for _, k := range due {
		g.enqueue(ctx, k)
	}
	g.rescanDir(ctx, filepath.Join(g.t.root, Incoming), watch)
}

// rescanDir watches dir and the folders under it, and queues its files.
func (g *Gate) rescanDir(ctx context.Context, dir string, watch func(string)) {
	incoming := filepath.Join(g.t.root, Incoming)
	found, err := keys(incoming, dir, watch)
	if err != nil {
		g.o.Logger.Warn("uploads: cannot read incoming", "folder", dir, "error", err)
	}
	for _, k := range found {
		g.enqueue(ctx, k)
	}
}

// retryDue queues the staged files whose retry is due.
func (g *Gate) retryDue(ctx context.Context) {
	now := time.Now()
	var due []string
	g.mu.Lock()
	for k, at := range g.retryAt {
		if !now.Before(at) && !g.busy[k] && !g.queued[k] {
			due = append(due, k)
		}
	}
	g.mu.Unlock()
	for _, k := range due {
		g.enqueue(ctx, k)
	}
}

// hiddenPath reports whether a name of rel starts with ".": nothing the
// upload server writes (cdnapi refuses such names), so not an upload.
func hiddenPath(rel string) bool {
	return strings.HasPrefix(rel, ".") || strings.Contains(rel, "/.")
}
