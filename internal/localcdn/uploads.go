package localcdn

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/cdnapi/cdnapi/internal/clamd"
	"github.com/cdnapi/cdnapi/internal/fleet"
	"github.com/cdnapi/cdnapi/internal/nginx"
)

// Kinds of process of the upload path.
const (
	kindClamd   = "clamd"
	kindUploads = "uploads" // `cdnapi uploads`: scans, promotes, and syncs the origin
)

// Project is the project whose files list is the origin's: serve's default,
// so that GET /api/v1/files lists them.
const Project = "default"

// uploadsRoot is the uploads root: incoming/, staging/, quarantine/ and
// origin/, one folder per project in each.
func (c *CDN) uploadsRoot() string { return filepath.Join(c.Dir, "uploads") }

// originRoot is the folder the origin serves: project default's origin.
func (c *CDN) originRoot() string { return filepath.Join(c.uploadsRoot(), nginx.UploadOrigin, Project) }

// incomingRoot is where the upload server writes project default's uploads.
func (c *CDN) incomingRoot() string {
	return filepath.Join(c.uploadsRoot(), nginx.UploadIncoming, Project)
}

// clamdSocket is clamd's socket, as cdnapi's --clamd flags take it.
func (c *CDN) clamdSocket() string { return "unix:" + filepath.Join(c.Dir, "clamd", "clamd.sock") }

// startClamd starts ClamAV's clamd on a signature database of its own: the
// EICAR test string, dated now. Nothing is downloaded; a real deployment
// runs freshclam.
func (c *CDN) startClamd(ctx context.Context, _ Addrs, say func(string, ...any)) error {
	bin, err := clamd.Binary()
	if err != nil {
		return err
	}
	dir := filepath.Join(c.Dir, "clamd")
	db := filepath.Join(dir, "db")
	if err := os.MkdirAll(db, 0o755); err != nil {
		return err
	}
	if err := clamd.WriteTestDatabase(db, time.Now(), 1); err != nil {
		return err
	}
	conf := filepath.Join(dir, "clamd.conf")
	if err := clamd.WriteConfig(conf, clamd.Config{Socket: strings.TrimPrefix(c.clamdSocket(), "unix:"), Database: db,
		Log: filepath.Join(dir, "clamd.log")}); err != nil {
		return err
	}
	p := &fleet.Proc{Name: "clamd", Kind: kindClamd, Addr: c.clamdSocket(), Dir: dir, Log: filepath.Join(dir, "clamd.out"),
		Args: []string{bin, "--foreground", "--config-file=" + conf}}
	say("clamd on %s, signatures: the EICAR test string only (no freshclam here)", c.clamdSocket())
	cl, err := clamd.New(c.clamdSocket())
	if err != nil {
		return err
	}
	return c.launch(ctx, p, func(ctx context.Context) error { return cl.Ping(ctx) })
}

// startUploads starts `cdnapi uploads` on the uploads root: it scans what
// enters incoming, promotes what is clean into the origin, and lists each
// project's origin. The origin's files are written into incoming first, as
// uploads, so that every file the CDN lists was scanned; Up returns once
// they are all listed.
func (c *CDN) startUploads(ctx context.Context, _ Addrs, say func(string, ...any)) error {
	n, total, err := writeOrigin(c.incomingRoot())
	if err != nil {
		return err
	}
	p := &fleet.Proc{Name: "uploads", Kind: kindUploads, Dir: c.Dir, Log: filepath.Join(c.Dir, "uploads.log")}
	p.Args = []string{c.bin(), "uploads", c.uploadsRoot(), "--clamd", c.clamdSocket(), "--db", c.DB}
	say("cdnapi uploads: scanning %d files (%.1f MB) into the origin %s", n, float64(total)/1e6, c.originRoot())
	return c.launch(ctx, p, func(context.Context) error {
		if listed := syncedFiles(p.Log); listed < n {
			return fmt.Errorf("%d of %d files listed", listed, n)
		}
		return nil
	})
}

// syncedFiles reads the uploads log for how many of project default's
// files the origin sync has listed: the database is new, and each file is
// put once and never deleted while Up waits.
func syncedFiles(log string) int {
	f, err := os.Open(log)
	if err != nil {
		return 0
	}
	defer f.Close()
	files := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var line struct {
			Msg, Project string
			Put, Deleted int
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "origin: synced" && line.Project == Project {
			files += line.Put - line.Deleted
		}
	}
	return files
}

// startUploadServer starts the upload server: nginx with WebDAV, as
// deploy/nginx/upload.conf, asking serve's upload authorization about each
// request.
func (c *CDN) startUploadServer(ctx context.Context, a Addrs, say func(string, ...any)) error {
	s, err := nginx.New(filepath.Join(c.Dir, "upload"), a.Upload, nginx.Upload{Root: c.uploadsRoot(), Auth: a.UploadAuth})
	if err != nil {
		return err
	}
	c.Upload = a.Upload
	say("upload server on %s, authorized by serve on %s", a.Upload, a.UploadAuth)
	return c.start(ctx, c.nginxProc("upload", s), s.HealthURL())
}

// createUploadKey makes the key of scope upload for project default that
// the README's curl -T uses, and records it.
func (c *CDN) createUploadKey(ctx context.Context, say func(string, ...any)) error {
	cmd := exec.CommandContext(ctx, c.bin(), "keys", "create", "--project", Project, "--scope", "upload",
		"--name", "scripts/cdn", "--db", c.DB)
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("cdnapi keys create: %w", err)
	}
	c.UploadKey = strings.TrimSpace(string(out))
	say("upload key of project %s: %s (scripts/cdn upload-key prints it)", Project, c.UploadKey)
	return c.save()
}

// launch starts p, records it (after every start, so that Down finds what
// a failed Up left), and waits until ready succeeds while p runs, for up
// to three minutes: scanning and listing the origin's 321 files takes
// seconds on an idle machine, and much longer on a loaded one.
func (c *CDN) launch(ctx context.Context, p *fleet.Proc, ready func(context.Context) error) error {
	if err := p.Start(); err != nil {
		return err
	}
	c.Procs = append(c.Procs, p)
	if err := c.save(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	for {
		err := ready(ctx)
		if err == nil {
			return nil
		}
		if !p.Running() {
			return fmt.Errorf("%s exited during start-up: %s", p.Name, p.LogTail())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %v: %s", p.Name, err, p.LogTail())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
