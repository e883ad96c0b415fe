package localcdn

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cdnapi/cdnapi/internal/fleet"
)

// kindSync is the `cdnapi origin sync --follow` that lists the origin's files.
const kindSync = "origin-sync"

// Project is the project whose files list is the origin's: serve's default,
// so that GET /api/v1/files lists them.
const Project = "default"

// originRoot is the folder the origin serves.
func (c *CDN) originRoot() string { return filepath.Join(c.Dir, "origin", "files") }

// startOriginSync starts `cdnapi origin sync --follow` on the origin's
// folder, and waits until its first sync is committed: from then on the
// files list is the origin's, and a file added, changed or removed there
// shows in it within about a second.
func (c *CDN) startOriginSync(ctx context.Context, say func(string, ...any)) error {
	p := &fleet.Proc{Name: "origin-sync", Kind: kindSync, Dir: c.Dir, Log: filepath.Join(c.Dir, "origin-sync.log")}
	p.Args = []string{c.bin(), "origin", "sync", "--follow", "--db", c.DB, "--project", Project, c.originRoot()}
	say("origin sync: the files of project %s are those of %s", Project, c.originRoot())
	if err := p.Start(); err != nil {
		return err
	}
	c.Procs = append(c.Procs, p)
	if err := c.save(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		if b, _ := os.ReadFile(p.Log); strings.Contains(string(b), "following ") {
			return nil
		}
		if !p.Running() {
			return fmt.Errorf("origin sync exited during start-up: %s", p.LogTail())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("origin sync: the first sync did not end: %s", p.LogTail())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
