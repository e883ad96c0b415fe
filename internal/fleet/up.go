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
	pg, err := findPostgres()
	if err != nil {
		return nil, err
	}
	for _, prog := range []string{"haproxy", "redis-server", "go"} {
		if _, err := exec.LookPath(prog); err != nil {
			return nil, fmt.Errorf("%s is not installed: %w", prog, err)
		}
	}
	dir, err := os.MkdirTemp("", "cdnapi-fleet-")
	if err != nil {
		return nil, err
	}
	// The postgres user must reach its directories inside.
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	ports, err := freePorts(5 + 3*len(Servers))
	if err != nil {
		return nil, err
	}
	addr := func() string {
		a := "127.0.0.1:" + strconv.Itoa(ports[0])
		ports = ports[1:]
		return a
	}
	f = &Fleet{Dir: dir, Repo: o.Repo, API: addr(), Edge: addr(), Socket: filepath.Join(dir, "haproxy.sock"),
		DB: "cdnapi", Files: o.Files, RateLimit: o.RateLimit, RateBurst: o.RateBurst, statePath: o.StatePath}
	defer func() {
		if err != nil {
			err = errors.Join(err, f.Down())
		}
	}()
	say := func(format string, args ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, format+"\n", args...)
		}
	}
	save := func(p *Proc) error {
		f.Procs = append(f.Procs, p)
		return f.Save() // after every start, so that down finds what a failed up left
	}

	say("building cdnapi")
	build := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(dir, "cdnapi"), "./cmd/cdnapi")
	build.Dir = o.Repo
	if out, err := build.CombinedOutput(); err != nil {
		return f, fmt.Errorf("go build: %w: %s", err, out)
	}

	primaryAddr, standbyAddr := addr(), addr()
	say("PostgreSQL primary on %s", primaryAddr)
	primary, err := pg.initPrimary(filepath.Join(dir, Primary), port(primaryAddr))
	if err != nil {
		return f, err
	}
	if err := startPostgres(ctx, primary, save); err != nil {
		return f, err
	}
	if err := pgExec(ctx, pgDSN(primaryAddr, "postgres"), "CREATE DATABASE "+f.DB); err != nil {
		return f, err
	}
	say("PostgreSQL standby on %s (pg_basebackup -R)", standbyAddr)
	standby, err := pg.initStandby(filepath.Join(dir, Standby), port(standbyAddr), port(primaryAddr))
	if err != nil {
		return f, err
	}
	if err := startPostgres(ctx, standby, save); err != nil {
		return f, err
	}

	redis := &Proc{Name: Redis, Kind: "redis", Addr: addr(), Dir: dir, Log: filepath.Join(dir, "redis.log")}
	redis.Args = []string{"redis-server", "--bind", "127.0.0.1", "--port", strconv.Itoa(port(redis.Addr)),
		"--save", "", "--appendonly", "no", "--dir", dir}
	say("Redis on %s", redis.Addr)
	if err := redis.Start(); err != nil {
		return f, err
	}
	if err := save(redis); err != nil {
		return f, err
	}
	if err := waitRedis(ctx, redis); err != nil {
		return f, err
	}

	say("seeding %d files and %d assets into the primary", o.Files, o.Assets)
	seed := exec.CommandContext(ctx, filepath.Join(dir, "cdnapi"), "seed", "--db", f.PrimaryDSN(),
		"--files", strconv.Itoa(o.Files), "--assets", strconv.Itoa(o.Assets), "--seed", "7")
	if out, err := seed.CombinedOutput(); err != nil {
		return f, fmt.Errorf("cdnapi seed: %w: %s", err, out)
	}

	limits, err := f.limitFlags(redis.Addr)
	if err != nil {
		return f, err
	}
	var cdnapis []*Proc
	for _, name := range Servers {
		c := &Proc{Name: name, Kind: "cdnapi", Addr: addr(), Edge: addr(), Admin: addr(),
			Dir: dir, Log: filepath.Join(dir, name+".log")}
		c.Args = append([]string{filepath.Join(dir, "cdnapi"), "serve",
			"--api-addr", c.Addr, "--edge-addr", c.Edge, "--admin-addr", c.Admin,
			"--db", f.PrimaryDSN(), "--db-read", pgDSN(standbyAddr, f.DB),
			// Above haproxy's time to take a failing /readyz out of
			// rotation (deploy/haproxy.cfg): a draining process gets no
			// new requests before it closes its listeners.
			"--shutdown-delay", "2s",
			"--status-interval", "1s",
		}, limits...)
		say("cdnapi %s: api %s, edge %s, admin %s", name, c.Addr, c.Edge, c.Admin)
		if err := c.Start(); err != nil {
			return f, err
		}
		if err := save(c); err != nil {
			return f, err
		}
		cdnapis = append(cdnapis, c)
	}
	for _, c := range cdnapis {
		if err := waitReady(ctx, c); err != nil {
			return f, err
		}
	}

	hap := f.haproxyProc(cdnapis)
	say("haproxy: api %s, edge %s", f.API, f.Edge)
	if err := hap.Start(); err != nil {
		return f, err
	}
	if err := save(hap); err != nil {
		return f, err
	}
	if err := f.waitInRotation(ctx, true, Servers...); err != nil {
		return f, fmt.Errorf("%w: %s", err, hap.LogTail())
	}
	return f, nil
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

// startPostgres starts a server, records it, and waits until it answers.
func startPostgres(ctx context.Context, p *Proc, save func(*Proc) error) error {
	if err := p.Start(); err != nil {
		return err
	}
	if err := save(p); err != nil {
		return err
	}
	return waitPostgres(ctx, p)
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
