package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Options configure Up.
type Options struct {
	Repo      string // the cdnapi checkout: built with go build, and holds deploy/haproxy.cfg
	StatePath string // where the fleet is recorded (default DefaultStatePath)
	Files     int    // files and assets seeded into the primary
	Assets    int
	RateLimit int // per client and second, fleet-wide when Redis holds the buckets
	RateBurst int
	Log       io.Writer // progress, one line per step
}

// Up starts a fleet and records it. On failure it stops what it started.
func Up(ctx context.Context, o Options) (f *Fleet, err error) {
	if o.StatePath == "" {
		o.StatePath = DefaultStatePath()
	}
	if old, err := Load(o.StatePath); err == nil {
		return nil, fmt.Errorf("a fleet is already up in %s (state %s): run `fleet down` first", old.Dir, o.StatePath)
	}
	s, err := newStartup(o)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, s.Down())
		}
	}()
	if err := s.build(ctx); err != nil {
		return s.Fleet, err
	}
	if err := s.startPostgres(ctx); err != nil {
		return s.Fleet, err
	}
	if err := s.startRedis(ctx); err != nil {
		return s.Fleet, err
	}
	if err := s.seed(ctx); err != nil {
		return s.Fleet, err
	}
	cdnapis, err := s.startServers(ctx)
	if err != nil {
		return s.Fleet, err
	}
	if err := s.startHAProxy(ctx, cdnapis); err != nil {
		return s.Fleet, err
	}
	return s.Fleet, nil
}

// startup is a fleet on its way up: what Up's steps share.
type startup struct {
	*Fleet
	o     Options
	pg    *pgEnv
	ports []int // free ports not handed out yet
}

// newStartup checks that the programs a fleet runs are installed, and
// makes its directory and picks its ports.
func newStartup(o Options) (*startup, error) {
	pg, err := findPostgres()
	if err != nil {
		return nil, err
	}
	for _, prog := range []string{"haproxy", "redis-server", "go"} {
		if _, err := exec.LookPath(prog); err != nil {
			return nil, fmt.Errorf("%s is not installed: %w", prog, err)
		}
	}
	ports, err := freePorts(5 + 3*len(Servers))
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "cdnapi-fleet-")
	if err != nil {
		return nil, err
	}
	// The postgres user must reach its directories inside.
	if err := os.Chmod(dir, 0o755); err != nil {
		os.Remove(dir)
		return nil, err
	}
	s := &startup{o: o, pg: pg, ports: ports}
	s.Fleet = &Fleet{Dir: dir, Repo: o.Repo, API: s.addr(), Edge: s.addr(), Socket: filepath.Join(dir, "haproxy.sock"),
		DB: "cdnapi", Files: o.Files, RateLimit: o.RateLimit, RateBurst: o.RateBurst, statePath: o.StatePath}
	return s, nil
}

// addr hands out the next free port, as an address on 127.0.0.1.
func (s *startup) addr() string {
	a := "127.0.0.1:" + strconv.Itoa(s.ports[0])
	s.ports = s.ports[1:]
	return a
}

// say logs a step.
func (s *startup) say(format string, args ...any) {
	if s.o.Log != nil {
		fmt.Fprintf(s.o.Log, format+"\n", args...)
	}
}

// start starts p and records it, after every start, so that down finds
// what a failed up left.
func (s *startup) start(p *Proc) error {
	if err := p.Start(); err != nil {
		return err
	}
	s.Procs = append(s.Procs, p)
	return s.Save()
}

// build builds cdnapi from the checkout into the fleet's directory.
func (s *startup) build(ctx context.Context) error {
	s.say("building cdnapi")
	build := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(s.Dir, "cdnapi"), "./cmd/cdnapi")
	build.Dir = s.o.Repo
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %w: %s", err, out)
	}
	return nil
}

// startPostgres starts the primary, creates the fleet's database on it,
// and starts the standby, a copy of the primary that streams from it.
func (s *startup) startPostgres(ctx context.Context) error {
	primaryAddr, standbyAddr := s.addr(), s.addr()
	s.say("PostgreSQL primary on %s", primaryAddr)
	primary, err := s.pg.initPrimary(filepath.Join(s.Dir, Primary), port(primaryAddr))
	if err != nil {
		return err
	}
	if err := s.start(primary); err != nil {
		return err
	}
	if err := waitPostgres(ctx, primary); err != nil {
		return err
	}
	if err := pgExec(ctx, pgDSN(primaryAddr, "postgres"), "CREATE DATABASE "+s.DB); err != nil {
		return err
	}
	s.say("PostgreSQL standby on %s (pg_basebackup -R)", standbyAddr)
	standby, err := s.pg.initStandby(filepath.Join(s.Dir, Standby), port(standbyAddr), port(primaryAddr))
	if err != nil {
		return err
	}
	if err := s.start(standby); err != nil {
		return err
	}
	return waitPostgres(ctx, standby)
}

// startRedis starts Redis, which holds the rate limits, without
// persistence.
func (s *startup) startRedis(ctx context.Context) error {
	redis := &Proc{Name: Redis, Kind: "redis", Addr: s.addr(), Dir: s.Dir, Log: filepath.Join(s.Dir, "redis.log")}
	redis.Args = []string{"redis-server", "--bind", "127.0.0.1", "--port", strconv.Itoa(port(redis.Addr)),
		"--save", "", "--appendonly", "no", "--dir", s.Dir}
	s.say("Redis on %s", redis.Addr)
	if err := s.start(redis); err != nil {
		return err
	}
	return waitRedis(ctx, redis)
}

// seed writes the files and assets of Options into the primary.
func (s *startup) seed(ctx context.Context) error {
	s.say("seeding %d files and %d assets into the primary", s.o.Files, s.o.Assets)
	cmd := exec.CommandContext(ctx, filepath.Join(s.Dir, "cdnapi"), "seed", "--db", s.PrimaryDSN(),
		"--files", strconv.Itoa(s.o.Files), "--assets", strconv.Itoa(s.o.Assets), "--seed", "7")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("cdnapi seed: %w: %s", err, out)
	}
	return nil
}

// startServers starts the cdnapi processes, writing to the primary and
// reading from the standby, and waits until each is ready.
func (s *startup) startServers(ctx context.Context) ([]*Proc, error) {
	limits, err := s.limitFlags(s.Proc(Redis).Addr)
	if err != nil {
		return nil, err
	}
	var cdnapis []*Proc
	for _, name := range Servers {
		c := &Proc{Name: name, Kind: "cdnapi", Addr: s.addr(), Edge: s.addr(), Admin: s.addr(),
			Dir: s.Dir, Log: filepath.Join(s.Dir, name+".log")}
		c.Args = append([]string{filepath.Join(s.Dir, "cdnapi"), "serve",
			"--api-addr", c.Addr, "--edge-addr", c.Edge, "--admin-addr", c.Admin,
			"--db", s.PrimaryDSN(), "--db-read", pgDSN(s.Proc(Standby).Addr, s.DB),
			// Above haproxy's time to take a failing /readyz out of
			// rotation (deploy/haproxy.cfg): a draining process gets no
			// new requests before it closes its listeners.
			"--shutdown-delay", "2s",
			"--status-interval", "1s",
		}, limits...)
		s.say("cdnapi %s: api %s, edge %s, admin %s", name, c.Addr, c.Edge, c.Admin)
		if err := s.start(c); err != nil {
			return nil, err
		}
		cdnapis = append(cdnapis, c)
	}
	for _, c := range cdnapis {
		if err := waitReady(ctx, c); err != nil {
			return nil, err
		}
	}
	return cdnapis, nil
}

// startHAProxy starts haproxy in front of cdnapis and waits until it has
// every one in rotation.
func (s *startup) startHAProxy(ctx context.Context, cdnapis []*Proc) error {
	hap := s.haproxyProc(cdnapis)
	s.say("haproxy: api %s, edge %s", s.API, s.Edge)
	if err := s.start(hap); err != nil {
		return err
	}
	if err := s.waitInRotation(ctx, true, Servers...); err != nil {
		return fmt.Errorf("%w: %s", err, hap.LogTail())
	}
	return nil
}

// PrimaryDSN is the URL of the fleet's database on the primary.
func (f *Fleet) PrimaryDSN() string { return pgDSN(f.Proc(Primary).Addr, f.DB) }

// limitFlags returns the rate-limit flags of serve, as far as this cdnapi
// has them, and records which kind of limit the fleet runs with.
func (f *Fleet) limitFlags(redisAddr string) ([]string, error) {
	out, _ := exec.Command(filepath.Join(f.Dir, "cdnapi"), "serve", "--help").CombinedOutput()
	has := func(flag string) bool { return strings.Contains(string(out), "-"+flag+" ") }
	if f.RateLimit <= 0 || !has("rate-limit") {
		f.RateLimit, f.RateBurst = 0, 0
		return nil, nil
	}
	flags := []string{"--rate-limit", strconv.Itoa(f.RateLimit), "--rate-burst", strconv.Itoa(f.RateBurst)}
	if has("trusted-proxies") {
		// haproxy's X-Forwarded-For names the client; haproxy is on loopback.
		flags = append(flags, "--trusted-proxies", "127.0.0.1/32")
	}
	f.Limits = "memory"
	if has("rate-limit-redis") {
		flags = append(flags, "--rate-limit-redis", "redis://"+redisAddr)
		f.Limits = "redis"
		if has("rate-limit-redis-timeout") {
			// The default (50 ms) suits a machine with cores to spare.
			// Here five servers, haproxy and the load share a few cores,
			// answers can take a second, and a Redis call waiting that
			// long for a core would open the limit (fail open) while
			// Redis is up. A Redis that is down refuses at once, whatever
			// the timeout, so the drill's outage is not slower for it.
			flags = append(flags, "--rate-limit-redis-timeout", "1s")
		}
	}
	return flags, nil
}

func port(addr string) int {
	_, p, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(p)
	return n
}

// waitRedis polls until Redis answers PING.
func waitRedis(ctx context.Context, p *Proc) error {
	return poll(ctx, p, func() error { return redisPing(p.Addr) })
}

// waitReady polls until a cdnapi process's /readyz answers 200.
func waitReady(ctx context.Context, p *Proc) error {
	return poll(ctx, p, func() error {
		code, err := httpStatus(ctx, "http://"+p.Admin+"/readyz")
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("/readyz %d", code)
		}
		return err
	})
}

// poll calls check until it succeeds, p exits, or a minute passes.
func poll(ctx context.Context, p *Proc, check func() error) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		err := check()
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
