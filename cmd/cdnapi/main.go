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
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errUsage):
		fmt.Fprintln(os.Stderr, "cdnapi:", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "cdnapi:", err)
		os.Exit(1)
	}
}
