package main

import (
	"cmp"
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
		if example := envExample(fs); example != "" {
			fmt.Fprintf(stdout, "Flags (each can also be set as CDNAPI_<FLAG>, e.g. --%s as %s; flags win):\n", example, envName(example))
		}
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	return fs
}

// envExample is the flag of fs that the help's CDNAPI_<FLAG> example names,
// a flag the command has: the first of --api-addr, --db and --key it has,
// else its first flag of two words, else its first flag; "" when it has
// none.
func envExample(fs *flag.FlagSet) string {
	for _, name := range []string{"api-addr", "db", "key"} {
		if fs.Lookup(name) != nil {
			return name
		}
	}
	first, dashed := "", ""
	fs.VisitAll(func(f *flag.Flag) {
		if first == "" {
			first = f.Name
		}
		if dashed == "" && strings.Contains(f.Name, "-") {
			dashed = f.Name
		}
	})
	return cmp.Or(dashed, first)
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
	acceptDays(fs)
	// flag prints the whole usage on any mistake; only --help asks for it.
	usage := fs.Usage
	fs.Usage = func() {}
	defer func() { fs.Usage = usage }()
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				usage()
				return nil, flag.ErrHelp
			}
			return nil, flagError(fs, err)
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

// flagError is the one line a mistake in the flags of fs reads as: an
// unknown flag names the nearest one there is, and every mistake says where
// the usage is.
func flagError(fs *flag.FlagSet, err error) error {
	help := fmt.Sprintf("cdnapi %s --help lists the flags", fs.Name())
	name, unknown := strings.CutPrefix(err.Error(), "flag provided but not defined: ")
	if !unknown {
		return usageError{fmt.Sprintf("%s: %v (%s)", fs.Name(), err, help)}
	}
	name = strings.TrimLeft(name, "-")
	msg := fmt.Sprintf("%s: unknown flag --%s", fs.Name(), name)
	if near := nearestFlag(fs, name); near != "" {
		dashes := "--"
		if len(near) == 1 {
			dashes = "-" // as the usage spells -o
		}
		msg += fmt.Sprintf("; did you mean %s%s?", dashes, near)
	}
	return usageError{fmt.Sprintf("%s (%s)", msg, help)}
}

// flagAliases are words people reach for that name no flag, and the flag
// that does their job when fs has it.
var flagAliases = map[string][]string{
	"port":     {"api-addr", "addr"},
	"listen":   {"api-addr", "addr"},
	"host":     {"api-addr", "api"},
	"bind":     {"api-addr"},
	"address":  {"api-addr", "api"},
	"addr":     {"api-addr", "api"},
	"url":      {"api"},
	"database": {"db"},
	"dsn":      {"db"},
	"output":   {"o"},
	"format":   {"o", "log-format"},
	"days":     {"older-than"},
	"age":      {"older-than"},
	"verbose":  {"log-level"},
	"debug":    {"log-level"},
}

// nearestFlag returns the flag of fs that name most likely meant: an alias
// (--port means --api-addr), a flag that name is part of or that is part of
// name, or the flag within a third of name's length in edits; "" if none.
func nearestFlag(fs *flag.FlagSet, name string) string {
	name = strings.ToLower(strings.ReplaceAll(name, "_", "-"))
	if before, _, ok := strings.Cut(name, "="); ok {
		name = before
	}
	for _, alias := range flagAliases[name] {
		if fs.Lookup(alias) != nil {
			return alias
		}
	}
	best, bestDist := "", len(name)/3+1
	fs.VisitAll(func(f *flag.Flag) {
		d := editDistance(name, f.Name)
		if len(name) >= 3 && (strings.Contains(f.Name, name) || strings.Contains(name, f.Name) && len(f.Name) >= 3) {
			d = min(d, 1)
		}
		if d < bestDist { // VisitAll goes in order: the first of equals wins
			best, bestDist = f.Name, d
		}
	})
	return best
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
