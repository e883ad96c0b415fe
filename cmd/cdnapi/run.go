package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime/debug"

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
			return c.run(ctx, env, args[1:])
		}
	}
	return usageError{fmt.Sprintf("unknown command %q (see cdnapi --help)", args[0])}
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
