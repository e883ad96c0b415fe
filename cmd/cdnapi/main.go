// Command cdnapi serves the read API of a content delivery network, and holds
// the operator commands that prepare and manage its data.
//
// main only calls run, which takes everything from the outside world as
// arguments, so that tests run the real program in-process.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	if code := exitStatus(err); code != 0 {
		fmt.Fprintln(os.Stderr, "cdnapi:", err)
		os.Exit(code)
	}
}

// exitStatus is the status the program exits with after run returned err:
// 0 for success and --help, 2 for a mistake on the command line (as flag
// does), 130 for an interrupt (as shells do for SIGINT), 1 for the rest.
func exitStatus(err error) int {
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	case errors.Is(err, errInterrupted):
		return 130
	}
	return 1
}
