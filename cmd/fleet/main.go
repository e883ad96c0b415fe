// Command fleet runs cdnapi as a fleet on this machine, on loopback, from
// throwaway processes: a PostgreSQL primary and streaming standby, Redis,
// three `cdnapi serve` and haproxy in front (deploy/haproxy.cfg).
//
//	fleet up       start the fleet and record it (default state: $TMPDIR/cdnapi-fleet.json)
//	fleet status   every part, its address and health
//	fleet drill    steady load through haproxy while parts are killed, one at a time
//	fleet down     stop everything by pid and remove the temporary directory
//	fleet env      the fleet's addresses as shell variables (scripts/bench-fleet)
//
// drill runs on the fleet that is up, or brings one up and down around itself.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"text/tabwriter"

	"github.com/cdnapi/cdnapi/internal/fleet"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		os.Exit(1)
	}
}

const usage = "usage: fleet [flags] up|status|drill|down|env"

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("fleet", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, usage); fs.PrintDefaults() }
	state := fs.String("state", fleet.DefaultStatePath(), "the fleet's state file")
	opts := fleet.Options{Files: 3000, Assets: 20000, RateLimit: 20, RateBurst: 20, Log: stderr}
	fs.IntVar(&opts.Files, "files", opts.Files, "up: files seeded")
	fs.IntVar(&opts.Assets, "assets", opts.Assets, "up: assets seeded")
	fs.IntVar(&opts.RateLimit, "rate-limit", opts.RateLimit, "up: requests per second per client (0: no limit)")
	fs.IntVar(&opts.RateBurst, "rate-burst", opts.RateBurst, "up: burst per client")
	var d fleet.DrillOptions
	fs.IntVar(&d.Rate, "rate", 300, "drill: requests per second sent through haproxy")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New(usage)
	}
	opts.StatePath = *state
	switch fs.Arg(0) {
	case "up":
		repo, err := findRepo()
		if err != nil {
			return err
		}
		opts.Repo = repo
		f, err := fleet.Up(ctx, opts)
		if err != nil {
			return err
		}
		return printStatus(ctx, f, stdout)
	case "status":
		f, err := fleet.Load(*state)
		if err != nil {
			return err
		}
		return printStatus(ctx, f, stdout)
	case "env":
		f, err := fleet.Load(*state)
		if err != nil {
			return err
		}
		for _, kv := range f.Env() {
			fmt.Fprintf(stdout, "export %s\n", kv)
		}
		return nil
	case "down":
		f, err := fleet.Load(*state)
		if err != nil {
			return err
		}
		return f.Down()
	case "drill":
		f, err := fleet.Load(*state)
		if err != nil { // no fleet up: bring one up for the drill alone
			if opts.Repo, err = findRepo(); err != nil {
				return err
			}
			if f, err = fleet.Up(ctx, opts); err != nil {
				return err
			}
			defer f.Down()
		}
		d.Log = stderr
		rep, err := fleet.Drill(ctx, f, d)
		if rep != nil {
			rep.Print(stdout)
		}
		if err != nil {
			return err
		}
		return rep.Err()
	default:
		return errors.New(usage)
	}
}

// printStatus prints one line per part.
func printStatus(ctx context.Context, f *fleet.Fleet, w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "PART\tKIND\tPID\tADDRESS\tHEALTHY\tDETAIL\n")
	unhealthy := 0
	for _, h := range f.Status(ctx) {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%v\t%s\n", h.Name, h.Kind, h.PID, h.Addr, h.OK, h.Detail)
		if !h.OK {
			unhealthy++
		}
	}
	fmt.Fprintf(tw, "\nrate limits: %s, directory: %s\n", map[string]string{"": "none", "memory": "per process (in memory)", "redis": "fleet-wide (Redis)"}[f.Limits], f.Dir)
	tw.Flush()
	if unhealthy > 0 {
		return fmt.Errorf("%d parts unhealthy", unhealthy)
	}
	return nil
}

// findRepo returns the directory of go.mod, from the working directory up.
func findRepo() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run fleet inside the cdnapi checkout (no go.mod found)")
		}
		dir = parent
	}
}
