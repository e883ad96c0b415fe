package fleet

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// DrillOptions configure Drill.
type DrillOptions struct {
	Rate int       // requests per second through haproxy (default 300)
	Log  io.Writer // a line as each step begins
	// Check, if set, sees every answer of the load (tests validate them
	// against the OpenAPI document). It is called concurrently.
	Check func(*http.Request, *http.Response, []byte)
}

// step is one thing the drill does to the fleet while the load runs.
type step struct {
	name string
	do   func(ctx context.Context, d *drill) error
	// What the checks expect of the step's answers.
	storageDown bool // lists may answer 503 storage_unavailable
	// expectOutage: from 3 s in, the status document must show Storage
	// major_outage (two status intervals and a margin).
	expectOutage bool
	// storageUp: one database server at least answers all along, so no
	// status poll may show Storage major_outage.
	storageUp bool
	redisDown bool // the limit is off
	// writes is what the step's writes (drill.write, in order) must do:
	// true to succeed, false to fail.
	writes []bool
}

// drill is a drill in progress.
type drill struct {
	f      *Fleet
	load   *load
	log    io.Writer
	notes  []string // what the current step observed, for the report
	writes []error  // the writes of the current step: nil for a success
	// inflight is the number of requests in flight when step 1 killed a
	// process: a bound on what the kill may cost.
	inflight int64
	// limitBackBy, if set, is when the limit must be in force again
	// (after Redis comes back); else from the step's start.
	limitBackBy time.Time
}

func (d *drill) note(format string, args ...any) {
	d.notes = append(d.notes, fmt.Sprintf(format, args...))
}

// steps are the drill: one thing broken at a time.
var steps = []step{
	{name: "0 steady", do: func(ctx context.Context, d *drill) error { return sleep(ctx, 3*time.Second) }},
	{name: "1 kill -9 c2, restart", do: func(ctx context.Context, d *drill) error {
		d.inflight = d.load.inflight.Load()
		d.note("%d requests in flight at the kill (on all processes)", d.inflight)
		if err := d.f.Proc("c2").Kill(); err != nil {
			return err
		}
		if err := sleep(ctx, time.Second); err != nil {
			return err
		}
		return d.start(ctx, d.f.Proc("c2"))
	}},
	{name: "2 roll c1, c2, c3", do: func(ctx context.Context, d *drill) error { return d.roll(ctx, nil) }},
	// Reads survive the loss of either server: from the primary while the
	// standby is down, from the standby while the primary is, with no
	// failed read and no 503 (cdnapi's fallback pool, internal/postgres's
	// reads.go). Writes go to the primary alone: they fail while it is
	// down and succeed once it is back.
	{name: "3a standby stopped 10s", storageUp: true, do: func(ctx context.Context, d *drill) error {
		if err := d.f.Proc(Standby).Stop(syscall.SIGINT, 30*time.Second); err != nil {
			return err
		}
		d.f.Save()
		return sleep(ctx, 10*time.Second)
	}},
	{name: "3b standby started", storageUp: true, do: func(ctx context.Context, d *drill) error {
		if err := d.startPostgres(ctx, d.f.Proc(Standby)); err != nil {
			return err
		}
		return sleep(ctx, 2*time.Second)
	}},
	{name: "3c primary, standby down in turn", storageUp: true, writes: []bool{false, true},
		do: func(ctx context.Context, d *drill) error { return d.inTurn(ctx) }},
	// Both down is an honest 503 storage_unavailable, and the status says so.
	{name: "3d both stopped 6s", storageDown: true, expectOutage: true, do: func(ctx context.Context, d *drill) error {
		for _, name := range []string{Standby, Primary} {
			if err := d.f.Proc(name).Stop(syscall.SIGINT, 30*time.Second); err != nil {
				return err
			}
		}
		d.f.Save()
		return sleep(ctx, 6*time.Second)
	}},
	{name: "3e both started", storageDown: true, do: func(ctx context.Context, d *drill) error {
		for _, name := range []string{Primary, Standby} {
			if err := d.startPostgres(ctx, d.f.Proc(name)); err != nil {
				return err
			}
		}
		if err := d.f.waitInRotation(ctx, true, Servers...); err != nil {
			return err
		}
		return sleep(ctx, time.Second)
	}},
	{name: "4a redis killed 10s", redisDown: true, do: func(ctx context.Context, d *drill) error {
		if err := d.f.Proc(Redis).Kill(); err != nil {
			return err
		}
		d.f.Save()
		return sleep(ctx, 10*time.Second)
	}},
	{name: "4b redis started", do: func(ctx context.Context, d *drill) error {
		p := d.f.Proc(Redis)
		begin := time.Now()
		if err := p.Start(); err != nil {
			return err
		}
		d.f.Save()
		if err := waitRedis(ctx, p); err != nil {
			return err
		}
		// Each process finds Redis at its next ping; half a second more
		// for a ping on a busy machine.
		d.limitBackBy = time.Now().Add(redisCheckInterval + 500*time.Millisecond)
		d.note("Redis answered %v after its start; the limit must be in force %v later (cdnapi pings it every %v)",
			time.Since(begin).Round(time.Millisecond), redisCheckInterval+500*time.Millisecond, redisCheckInterval)
		return sleep(ctx, 3*time.Second)
	}},
	{name: "5a primary stopped", writes: []bool{false}, do: func(ctx context.Context, d *drill) error {
		if err := d.f.Proc(Primary).Stop(syscall.SIGINT, 30*time.Second); err != nil {
			return err
		}
		d.f.Save()
		d.write(ctx, "primary", d.f.PrimaryDSN())
		return sleep(ctx, 6*time.Second)
	}},
	{name: "5b promote standby, repoint", writes: []bool{true}, do: func(ctx context.Context, d *drill) error {
		standby := d.f.Proc(Standby)
		dsn := pgDSN(standby.Addr, d.f.DB)
		begin := time.Now()
		if err := pgExec(ctx, pgDSN(standby.Addr, "postgres"), "SELECT pg_promote(wait => true)"); err != nil {
			return fmt.Errorf("promote: %w", err)
		}
		d.note("standby promoted in %v (pg_promote)", time.Since(begin).Round(time.Millisecond))
		d.write(ctx, "promoted standby", dsn)
		// Repointing is a rolling restart with --db on the new primary.
		return d.roll(ctx, func(p *Proc) { setFlag(p.Args, "--db", dsn) })
	}},
	{name: "6 steady", do: func(ctx context.Context, d *drill) error { return sleep(ctx, 3*time.Second) }},
}

// Drill sends a steady load through haproxy while it breaks the fleet one
// part at a time (steps), and reports every answer by step. The error is
// for a drill that could not run; the report's Err, for checks that failed.
// The fleet ends failed over: the old primary stopped, the standby primary.
func Drill(ctx context.Context, f *Fleet, o DrillOptions) (*Report, error) {
	if o.Rate <= 0 {
		o.Rate = 300
	}
	for _, p := range f.Procs {
		if !p.Running() {
			return nil, fmt.Errorf("%s is not running: the drill starts from a whole fleet (fleet down, fleet up)", p.Name)
		}
	}
	d := &drill{f: f, load: newLoad(f, o.Rate, o.Check), log: o.Log}
	rep := &Report{fleet: f, rate: o.Rate}
	loadCtx, stopLoad := context.WithCancel(ctx)
	loaded := make(chan struct{})
	go func() {
		d.load.run(loadCtx)
		close(loaded)
	}()
	var err error
	for i, st := range steps {
		d.load.step.Store(int32(i))
		d.notes, d.writes, d.inflight, d.limitBackBy = nil, nil, -1, time.Time{}
		if d.log != nil {
			fmt.Fprintf(d.log, "drill: %s\n", st.name)
		}
		r := stepReport{step: st, start: time.Now()}
		err = st.do(ctx, d)
		r.end, r.notes, r.writes, r.inflight, r.limitBackBy = time.Now(), d.notes, d.writes, d.inflight, d.limitBackBy
		rep.steps = append(rep.steps, r)
		if err != nil {
			err = fmt.Errorf("step %s: %w", st.name, err)
			break
		}
	}
	d.load.step.Store(int32(len(steps))) // late answers count nowhere
	stopLoad()
	<-loaded
	rep.collect(d.load)
	return rep, err
}

// start starts a cdnapi process and waits until haproxy has it in rotation.
func (d *drill) start(ctx context.Context, p *Proc) error {
	if err := p.Start(); err != nil {
		return err
	}
	d.f.Save()
	if err := waitReady(ctx, p); err != nil {
		return err
	}
	return d.f.waitInRotation(ctx, true, p.Name)
}

// roll restarts every cdnapi process in turn: SIGTERM, wait for the exit
// (the drain), change (if set), start, wait until it is back in rotation.
func (d *drill) roll(ctx context.Context, change func(*Proc)) error {
	for _, name := range Servers {
		p := d.f.Proc(name)
		begin := time.Now()
		if err := p.Stop(syscall.SIGTERM, 30*time.Second); err != nil {
			return err
		}
		if change != nil {
			change(p)
		}
		if err := d.start(ctx, p); err != nil {
			return err
		}
		d.note("%s back in rotation %v after SIGTERM", name, time.Since(begin).Round(100*time.Millisecond))
	}
	return nil
}

// inTurn stops the primary under load, writes to it (which must fail),
// starts it again, writes (which must succeed), then stops and starts the
// standby. Each server is down 5 s, and the other answers all along.
func (d *drill) inTurn(ctx context.Context) error {
	primary, standby := d.f.Proc(Primary), d.f.Proc(Standby)
	begin := time.Now()
	if err := primary.Stop(syscall.SIGINT, 30*time.Second); err != nil {
		return err
	}
	d.f.Save()
	d.note("primary stopped at +%.1fs", time.Since(begin).Seconds())
	d.write(ctx, "stopped primary", d.f.PrimaryDSN())
	if err := sleep(ctx, 5*time.Second); err != nil {
		return err
	}
	if err := d.startPostgres(ctx, primary); err != nil {
		return err
	}
	d.note("primary answers again at +%.1fs", time.Since(begin).Seconds())
	d.write(ctx, "restarted primary", d.f.PrimaryDSN())
	if err := standby.Stop(syscall.SIGINT, 30*time.Second); err != nil {
		return err
	}
	d.f.Save()
	d.note("standby stopped at +%.1fs", time.Since(begin).Seconds())
	if err := sleep(ctx, 5*time.Second); err != nil {
		return err
	}
	if err := d.startPostgres(ctx, standby); err != nil {
		return err
	}
	d.note("standby answers again at +%.1fs", time.Since(begin).Seconds())
	return sleep(ctx, 2*time.Second)
}

// startPostgres starts a stopped server and waits until it answers.
func (d *drill) startPostgres(ctx context.Context, p *Proc) error {
	if err := p.Start(); err != nil {
		return err
	}
	d.f.Save()
	return waitPostgres(ctx, p)
}

// write sets a region's status with cdnapi on dsn, as an operator would,
// and notes what happened.
func (d *drill) write(ctx context.Context, where, dsn string) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	begin := time.Now()
	out, err := exec.CommandContext(ctx, filepath.Join(d.f.Dir, "cdnapi"), "regions", "--db", dsn,
		"set-status", "FRA1", "operational").CombinedOutput()
	took := time.Since(begin).Round(time.Millisecond)
	d.writes = append(d.writes, err)
	if err != nil {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		d.note("write to the %s (cdnapi regions set-status): failed after %v: %s", where, took, lines[len(lines)-1])
		return
	}
	d.note("write to the %s (cdnapi regions set-status): ok in %v", where, took)
}

// setFlag replaces the value of flag in args.
func setFlag(args []string, flag, value string) {
	if i := slices.Index(args, flag); i >= 0 && i+1 < len(args) {
		args[i+1] = value
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
