package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// errUsage marks a mistake on the command line; main exits with status 2
// for it, as flag does, and 1 for everything else.
var errUsage = errors.New("usage")

// usageError wraps a command-line mistake so that it prints as one line and
// still matches errUsage.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }
func (e usageError) Is(target error) bool {
	return target == errUsage
}

// newFlagSet returns a FlagSet for a subcommand that reports mistakes as
// errors instead of exiting, and prints its help to stdout.
func newFlagSet(name, synopsis string, stdout io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		fmt.Fprintf(stdout, "Usage: cdnapi %s\n\n", synopsis)
		fmt.Fprintln(stdout, "Flags (each can also be set as CDNAPI_<FLAG>, e.g. --api-addr as CDNAPI_API_ADDR; flags win):")
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	return fs
}

// parseFlags parses args, which must all be flags, then sets every flag the
// command line left alone from its CDNAPI_<FLAG> environment variable.
func parseFlags(fs *flag.FlagSet, args []string, getenv func(string) string) error {
	rest, err := parseArgs(fs, args, getenv)
	if err == nil && len(rest) > 0 {
		err = usageError{fmt.Sprintf("%s: unexpected argument %q (see cdnapi %s --help)", fs.Name(), rest[0], fs.Name())}
	}
	return err
}

// parseArgs parses args, in which flags and positional arguments may mix
// (as in `status set NAME STATUS --until T`), and returns the positional
// ones. Then it sets every flag the command line left alone from its
// CDNAPI_<FLAG> environment variable, if that is set: flags win over the
// environment because they are the more specific intent.
func parseArgs(fs *flag.FlagSet, args []string, getenv func(string) string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, flag.ErrHelp // flag has printed the usage
			}
			return nil, usageError{fmt.Sprintf("%s: %v (see cdnapi %s --help)", fs.Name(), err, fs.Name())}
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] || err != nil {
			return
		}
		key := envName(f.Name)
		if v := getenv(key); v != "" {
			if e := f.Value.Set(v); e != nil {
				err = usageError{fmt.Sprintf("%s: invalid value for %s: %v", fs.Name(), key, e)}
			}
		}
	})
	return positional, err
}

// envName returns the environment variable of a flag: "api-addr" is
// CDNAPI_API_ADDR.
func envName(flag string) string {
	return "CDNAPI_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}
