package localcdn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/cdnapi/cdnapi/internal/clamd"
	"github.com/cdnapi/cdnapi/internal/fleet"
	"github.com/cdnapi/cdnapi/internal/nginx"
)

// Options configure Up.
type Options struct {
	Repo      string    // the cdnapi checkout: built with go build, holds deploy/nginx
	StatePath string    // where the CDN is recorded (default DefaultStatePath)
	Addrs     Addrs     // default Ports(DefaultPortBase)
	Log       io.Writer // progress, one line per step
	// Ship names a region whose edge runs no follower: syslog-ng ships its
	// log to serve's ingest address (Addrs.Ingest) with an edge key, as
	// on an edge machine of its own. "": every edge has a follower.
	Ship string
}

// Up starts a CDN and records it. On failure it stops what it started and
// removes its directory.
func Up(ctx context.Context, o Options) (c *CDN, err error) {
	if o.StatePath == "" {
		o.StatePath = DefaultStatePath()
	}
	if o.Addrs.Origin == "" {
		o.Addrs = Ports(DefaultPortBase)
	}
	if o.Ship == "" {
		o.Addrs.Ingest = "" // not listened on: need not be free
	}
	if err := checkCanStart(o); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "cdnapi-cdn-")
	if err != nil {
		return nil, err
	}
	c = &CDN{Dir: dir, Repo: o.Repo, DB: "sqlite:" + filepath.Join(dir, "cdnapi.db"), Origin: o.Addrs.Origin, statePath: o.StatePath}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Down(io.Discard))
		}
	}()
	if err := c.save(); err != nil { // from now on, down finds the directory
		return c, err
	}
	say := func(format string, args ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, format+"\n", args...)
		}
	}

	if err := c.build(ctx, say); err != nil {
		return c, err
	}
	say("loading the regions %s into %s", regionCodes(), c.DB)
	if err := c.loadRegions(ctx); err != nil {
		return c, err
	}
	// The key first, so that serve's first load of the keys holds it.
	if err := c.createUploadKey(ctx, say); err != nil {
		return c, err
	}
	c.ship = o.Ship
	if o.Ship != "" {
		if err := c.createEdgeKey(ctx, o.Ship, say); err != nil {
			return c, err
		}
	}
	for _, start := range []func(context.Context, Addrs, func(string, ...any)) error{
		c.startClamd, c.startUploads, c.startOrigin, c.startEdges, c.startFollowers,
		c.startUploadServer, c.startServe, c.startShippers,
	} {
		if err := start(ctx, o.Addrs, say); err != nil {
			return c, err
		}
	}
	return c, nil
}

// checkCanStart fails, saying why, when a CDN cannot start as o says: one
// is up already, a program is missing, or an address is taken.
func checkCanStart(o Options) error {
	if old, err := Load(o.StatePath); err == nil {
		return fmt.Errorf("a CDN is already up in %s (state %s): run `scripts/cdn down` first", old.Dir, o.StatePath)
	}
	if _, err := nginx.Binary(); err != nil {
		return err
	}
	if _, err := clamd.Binary(); err != nil {
		return err
	}
	if o.Ship != "" {
		if _, err := syslogNG(); err != nil {
			return err
		}
		known := false
		for _, r := range Regions {
			known = known || r.Code == o.Ship
		}
		if !known {
			return fmt.Errorf("--ship %s: want one of the regions %v", o.Ship, regionCodes())
		}
	}
	if _, err := exec.LookPath("go"); err != nil {
		return fmt.Errorf("go is not installed: %w", err)
	}
	return checkFree(o.Addrs.all())
}

// build builds cdnapi from the checkout into the CDN's directory.
func (c *CDN) build(ctx context.Context, say func(string, ...any)) error {
	say("building cdnapi")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", c.bin(), "./cmd/cdnapi")
	cmd.Dir = c.Repo
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %w: %s", err, out)
	}
	return nil
}

// bin is the cdnapi binary built for this CDN.
func (c *CDN) bin() string { return filepath.Join(c.Dir, "cdnapi") }

// loadRegions writes the schema and the three regions: a follower refuses
// the lines of a region the database does not know.
func (c *CDN) loadRegions(ctx context.Context) error {
	var nd bytes.Buffer
	for _, r := range Regions {
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		nd.Write(append(b, '\n'))
	}
	file := filepath.Join(c.Dir, "regions.ndjson")
	if err := os.WriteFile(file, nd.Bytes(), 0o644); err != nil {
		return err
	}
	for _, args := range [][]string{
		{"migrate", "--db", c.DB},
		{"ingest", "regions", "--db", c.DB, file},
	} {
		cmd := exec.CommandContext(ctx, c.bin(), args...)
		cmd.Dir = c.Dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("cdnapi %s: %w: %s", args[0], err, out)
		}
	}
	return nil
}

// startOrigin starts nginx serving the origin: the files scanned clean.
func (c *CDN) startOrigin(ctx context.Context, _ Addrs, say func(string, ...any)) error {
	root := c.originRoot()
	say("origin on %s: %s", c.Origin, root)
	s, err := nginx.New(filepath.Join(c.Dir, "origin"), c.Origin, nginx.Origin{Root: root})
	if err != nil {
		return err
	}
	p := c.nginxProc("origin", s)
	return c.start(ctx, p, "http://"+c.Origin+"/index.html")
}

// startEdges starts an edge per region, in front of the origin, logging with
// the repository's deploy/nginx/cdnapi-log.conf.
func (c *CDN) startEdges(ctx context.Context, a Addrs, say func(string, ...any)) error {
	logFormat := filepath.Join(c.Repo, "deploy", "nginx", "cdnapi-log.conf")
	for i, r := range Regions {
		dir := filepath.Join(c.Dir, r.Code)
		e := Edge{Region: r.Code, Addr: a.Edges[i], Log: filepath.Join(dir, "access.log"),
			Rejects: filepath.Join(c.Dir, r.Code+".rejects"), Metrics: a.Metrics[i], Shipped: r.Code == c.ship}
		s, err := nginx.New(dir, e.Addr, nginx.Edge{Region: r.Code, Origin: "http://" + c.Origin, LogPath: e.Log, LogFormat: logFormat})
		if err != nil {
			return err
		}
		say("edge %s on %s, log %s", r.Code, e.Addr, e.Log)
		c.Edges = append(c.Edges, e)
		if err := c.start(ctx, c.nginxProc(r.Code, s), s.HealthURL()); err != nil {
			return err
		}
	}
	return nil
}

// nginxProc is the process of nginx server s, run in the foreground of its
// own session (fleet.Proc), which Down stops by pid.
func (c *CDN) nginxProc(name string, s *nginx.Server) *fleet.Proc {
	return &fleet.Proc{Name: name, Kind: kindNginx, Addr: s.Addr(), Args: s.Args(),
		Dir: s.Dir(), Log: filepath.Join(s.Dir(), "nginx.out")}
}

// startFollowers starts a `cdnapi follow` per edge, on its access log.
func (c *CDN) startFollowers(ctx context.Context, _ Addrs, say func(string, ...any)) error {
	for _, e := range c.Edges {
		if e.Shipped {
			continue
		}
		p := &fleet.Proc{Name: "follow-" + e.Region, Kind: kindFollow, Addr: e.Metrics, Dir: c.Dir,
			Log: filepath.Join(c.Dir, "follow-"+e.Region+".log")}
		p.Args = []string{c.bin(), "follow", "--db", c.DB, "--rejects", e.Rejects, "--metrics-addr", e.Metrics, e.Log}
		say("follower of %s: metrics on %s", e.Region, e.Metrics)
		if err := c.start(ctx, p, "http://"+e.Metrics+"/metrics"); err != nil {
			return err
		}
	}
	return nil
}

// startServe starts `cdnapi serve` on the database, probing every edge.
func (c *CDN) startServe(ctx context.Context, a Addrs, say func(string, ...any)) error {
	p := &fleet.Proc{Name: "serve", Kind: kindServe, Addr: a.API, Edge: a.Edge, Admin: a.Admin,
		Dir: c.Dir, Log: filepath.Join(c.Dir, "serve.log")}
	p.Args = []string{c.bin(), "serve", "--db", c.DB,
		"--api-addr", a.API, "--edge-addr", a.Edge, "--admin-addr", a.Admin,
		"--status-interval", "1s",
		// No load balancer to tell before closing.
		"--shutdown-delay", "0s",
		// The upload path: the upload server's authorization, and both
		// of its components measured.
		"--upload-auth-addr", a.UploadAuth, "--uploads", c.uploadsRoot(),
		"--upload-url", "http://" + a.Upload, "--clamd", c.clamdSocket(),
		"--upload-canary-interval", "10s",
	}
	for _, e := range c.Edges {
		p.Args = append(p.Args, "--region-probe", e.Region+"=http://"+e.Addr+"/health")
	}
	if c.ship != "" {
		p.Args = append(p.Args, "--ingest-addr", a.Ingest)
	}
	say("cdnapi serve: api %s, edge %s, admin %s, upload authorization %s", a.API, a.Edge, a.Admin, a.UploadAuth)
	return c.start(ctx, p, "http://"+a.Admin+"/readyz")
}

// start starts p, records it, and waits until url answers 200.
func (c *CDN) start(ctx context.Context, p *fleet.Proc, url string) error {
	return c.launch(ctx, p, func(ctx context.Context) error {
		code, err := httpStatus(ctx, url)
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("%s answered %d", url, code)
		}
		return err
	})
}

// checkFree fails if any of addrs is taken, naming it: with fixed ports, a
// CDN already up, or another program, is the likely cause.
func checkFree(addrs []string) error {
	var taken []string
	for _, a := range addrs {
		l, err := net.Listen("tcp", a)
		if err != nil {
			taken = append(taken, a)
			continue
		}
		l.Close()
	}
	if len(taken) > 0 {
		return fmt.Errorf("addresses in use: %v (another CDN or cdnapi serve? choose others with --port-base and --api-addr, --edge-addr, --admin-addr)", taken)
	}
	return nil
}

// regionCodes returns the codes of Regions.
func regionCodes() []string {
	var codes []string
	for _, r := range Regions {
		codes = append(codes, r.Code)
	}
	return codes
}
