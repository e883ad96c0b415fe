package main

import (
	"flag"
	"fmt"
	"io"
	"time"
)

// untilHelp is the help of every --until flag.
const untilHelp = "with set: when the status ends, as a duration from now (2h, 90m) or an RFC 3339 time (default: no end)"

// parseUntil reads an --until of cmd: a duration from now, such as 2h or
// 1h30m, which keeps examples and scripts working as time passes, or an RFC
// 3339 time. The end must be in the future. It returns whole seconds, UTC,
// as the stores keep them.
func parseUntil(cmd, s string, now time.Time) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		d, derr := time.ParseDuration(s)
		if derr != nil {
			return time.Time{}, usageError{fmt.Sprintf("%s: --until must be a duration such as 2h or an RFC 3339 time such as 2026-11-21T18:00:00Z, not %q", cmd, s)}
		}
		t = now.Add(d)
	}
	t = t.UTC().Truncate(time.Second)
	if !t.After(now) {
		return time.Time{}, usageError{fmt.Sprintf("%s: --until must be in the future", cmd)}
	}
	return t, nil
}

// newSubcommandFlagSet is newFlagSet for a command with subcommands: when
// args start with one that synopses describe, the flag set is named after
// it and prints its own usage, so that `cdnapi status set --help` says how
// to use set rather than the whole of status.
func newSubcommandFlagSet(name, synopsis string, synopses map[string]string, args []string, stdout io.Writer) *flag.FlagSet {
	if len(args) > 0 {
		if sub, ok := synopses[args[0]]; ok {
			return newFlagSet(name+" "+args[0], sub, stdout)
		}
	}
	return newFlagSet(name, synopsis, stdout)
}
