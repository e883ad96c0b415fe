// Command cdn runs a CDN on this machine, on loopback (internal/localcdn): an
// nginx origin, three nginx edges (FRA1, IAD1, SIN1) with proxy_cache, a
// `cdnapi follow` per edge's access log, and `cdnapi serve` over the SQLite
// database they fill.
//
//	cdn up       build cdnapi and start it all (state: $TMPDIR/cdnapi-cdn.json)
//	cdn status      every address, and whether it answers
//	cdn upload-key  the key of scope upload that up made, for curl -T
//	cdn down        stop everything by pid and remove the temporary directory
//
// It is a command of its own rather than a subcommand of cmd/fleet: its parts
// (nginx, followers, one SQLite database) and its flags have nothing in common
// with the fleet's but the way processes are started and stopped, which both
// take from internal/fleet.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"text/tabwriter"

	"github.com/cdnapi/cdnapi/internal/localcdn"
	"github.com/cdnapi/cdnapi/internal/nginx"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "cdn:", err)
		os.Exit(1)
	}
}

const usage = "usage: cdn [flags] up|status|upload-key|down"

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cdn", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, usage); fs.PrintDefaults() }
	state := fs.String("state", localcdn.DefaultStatePath(), "the CDN's state file")
	base := fs.Int("port-base", localcdn.DefaultPortBase, "up: the origin's port; the edges FRA1, IAD1, SIN1 take the next three, their followers' metrics the three after, then the upload server and serve's upload authorization")
	def := localcdn.Ports(localcdn.DefaultPortBase)
	api := fs.String("api-addr", def.API, "up: serve's API address")
	edge := fs.String("edge-addr", def.Edge, "up: serve's edge address (regions, assets)")
	admin := fs.String("admin-addr", def.Admin, "up: serve's admin address")
	ship := fs.String("ship", "", "up: a region (such as SIN1) whose edge runs no follower: syslog-ng ships its log to serve's ingest address, on the port after serve's upload authorization")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New(usage)
	}
	switch fs.Arg(0) {
	case "up":
		repo, err := nginx.ModuleRoot()
		if err != nil {
			return err
		}
		addrs := localcdn.Ports(*base)
		addrs.API, addrs.Edge, addrs.Admin = *api, *edge, *admin
		c, err := localcdn.Up(ctx, localcdn.Options{Repo: repo, StatePath: *state, Addrs: addrs, Log: stderr, Ship: *ship})
		if err != nil {
			return err
		}
		return printStatus(ctx, c, stdout)
	case "status":
		c, err := localcdn.Load(*state)
		if err != nil {
			return err
		}
		return printStatus(ctx, c, stdout)
	case "upload-key":
		c, err := localcdn.Load(*state)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, c.UploadKey)
		return nil
	case "down":
		c, err := localcdn.Load(*state)
		if err != nil {
			return err
		}
		return c.Down(stdout)
	default:
		return errors.New(usage)
	}
}

// printStatus prints one line per process, and where the data is.
func printStatus(ctx context.Context, c *localcdn.CDN, w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "PART\tKIND\tPID\tADDRESS\tANSWERS\tDETAIL\n")
	bad := 0
	for _, h := range c.Status(ctx) {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%v\t%s\n", h.Name, h.Kind, h.PID, h.Addr, h.OK, h.Detail)
		if !h.OK {
			bad++
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "\ndatabase: %s\ndirectory: %s\nupload: curl -T FILE -H \"Authorization: Bearer %s\" http://%s/PATH\n", c.DB, c.Dir, c.UploadKey, c.Upload)
	if bad > 0 {
		return fmt.Errorf("%d parts do not answer", bad)
	}
	return nil
}
