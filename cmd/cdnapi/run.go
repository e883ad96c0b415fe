package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/cdnapi/cdnapi/internal/sqlite"
)

// command is one subcommand of cdnapi.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env *environment, args []string) error
}

// environment is what a command may use of the outside world. Commands read
// and write nothing else, so tests can run them in-process.
type environment struct {
	getenv func(string) string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

// collectLessOften sets Go's GC percent to percent unless the environment
// sets GOGC, for a command whose live heap is small and that allocates
// fast, and returns what puts the setting back.
func (env *environment) collectLessOften(percent int) (restore func()) {
	if env.getenv("GOGC") != "" {
		return func() {}
	}
	old := debug.SetGCPercent(percent)
	return func() { debug.SetGCPercent(old) }
}

var commands = []command{
	{"serve", "serve the API, edge and admin addresses", runServe},
	{"seed", "write deterministic demo data", runSeed},
	{"migrate", "apply the database schema", runMigrate},
	{"ingest", "load files, assets or regions from NDJSON", runIngest},
	{"follow", "tail an nginx edge's access log into the assets, exactly once", runFollow},
	{"origin", "index a folder (an origin) into a project's files, and keep it in sync", runOrigin},
	{"uploads", "scan uploads with clamd, move the clean ones into the origin, and list them", runUploads},
	{"prune", "delete assets older than a given age", runPrune},
	{"backup", "copy the SQLite database to a file, safely while serving", runBackup},
	{"regions", "list regions, or set the status of one", runRegions},
	{"status", "show or set component statuses by hand", runStatus},
	{"keys", "create, list or revoke API keys", runKeys},
	{"webhooks", "add, list or remove webhooks, and show their deliveries", runWebhooks},
	{"get", "read files, assets, regions or the status from a running API", runGet},
	{"version", "print the version, VCS revision and Go version of this build", runVersion},
}

// run is the whole program: main passes it the process's arguments, without
// the program name, and its standard streams.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	env := &environment{getenv: getenv, stdin: stdin, stdout: stdout, stderr: stderr}
	// A write to a SQLite file that another process writes to waits, and
	// says so here (serve and follow log it instead).
	ctx = sqlite.WithWaitNotice(ctx, func(msg string) { fmt.Fprintln(stderr, msg) })
	if len(args) == 0 {
		usage(stdout)
		return usageError{"no command given (see cdnapi --help)"}
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		usage(stdout)
		return flag.ErrHelp
	case "-version", "--version":
		return runVersion(ctx, env, args[1:])
	}
	for _, c := range commands {
		if c.name == args[0] {
			err := c.run(ctx, env, args[1:])
			// Whatever the error reads as once Ctrl-C or SIGTERM ended ctx
			// ("context canceled", or a driver's "interrupted"), the
			// interrupt is its cause.
			if err != nil && errors.Is(ctx.Err(), context.Canceled) && !errors.Is(err, errUsage) {
				return interruptedError{interrupted(c.name, args[1:])}
			}
			return err
		}
	}
	msg := fmt.Sprintf("unknown command %q", args[0])
	if near := nearestCommand(args[0]); near != "" {
		msg += fmt.Sprintf("; did you mean %s?", near)
	}
	return usageError{msg + " (see cdnapi --help)"}
}

// nearestCommand returns the command that name most likely meant: one
// that name is the start of or that starts name, or one within a third of
// name's length in edits; "" if none.
func nearestCommand(name string) string {
	name = strings.ToLower(name)
	best, bestDist := "", len(name)/3+1
	for _, c := range commands {
		d := editDistance(name, c.name)
		if len(name) >= 3 && (strings.HasPrefix(c.name, name) || strings.HasPrefix(name, c.name)) {
			d = min(d, 1)
		}
		if d < bestDist { // in the table's order: the first of equals wins
			best, bestDist = c.name, d
		}
	}
	return best
}

// errInterrupted marks a command that Ctrl-C or SIGTERM stopped before it
// finished; main exits with status 130 for it, as shells do for SIGINT.
var errInterrupted = errors.New("interrupted")

// interruptedError is the one line an interrupted command ends with: what
// it left behind, and that running it again finishes the work, instead of
// "context canceled".
type interruptedError struct{ msg string }

func (e interruptedError) Error() string { return e.msg }
func (e interruptedError) Is(target error) bool {
	return target == errInterrupted
}

// interrupted is what an interrupt of the command name, run with args, has
// left behind. Every write of ours is idempotent, so running the same
// command again is always the way on.
func interrupted(name string, args []string) string {
	sub := ""
	if len(args) > 0 {
		sub = args[0]
	}
	switch {
	case name == "ingest", name == "seed":
		// One transaction each (see internal/ingest and seed.go).
		return "interrupted: nothing was written; run the same command again"
	case name == "migrate":
		return "interrupted: the migrations applied so far are kept; run the same command again to apply the rest"
	case name == "prune":
		return "interrupted: the assets deleted so far stay deleted; run the same command again to delete the rest"
	case name == "origin" && sub == "sync", name == "follow":
		return "interrupted: the batches committed so far are kept; run the same command again to go on from there"
	case name == "backup":
		return "interrupted: no backup was made; run the same command again"
	}
	return "interrupted; run the same command again"
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "cdnapi serves the read API of a content delivery network.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage: cdnapi <command> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, `Run "cdnapi <command> --help" for the flags of a command.`)
}
