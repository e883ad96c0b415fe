package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// untilHelp is the help of every --until flag.
const untilHelp = "with set: when the status ends, as a duration from now (2h, 90m, 7d) or an RFC 3339 time (default: no end)"

// parseUntil reads an --until of cmd: a duration from now, such as 2h or
// 1h30m, which keeps examples and scripts working as time passes, or an RFC
// 3339 time. The end must be in the future. It returns whole seconds, UTC,
// as the stores keep them.
func parseUntil(cmd, s string, now time.Time) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		d, derr := parseDays(s)
		if derr != nil {
			return time.Time{}, usageError{fmt.Sprintf("%s: --until must be a duration such as 2h or 7d (units d, h, m, s) or an RFC 3339 time such as 2026-11-21T18:00:00Z, not %q", cmd, s)}
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

// day is the unit "d" of parseDays: 24 hours, as operators mean it in
// "keep 30d" (a calendar day may be 23 or 25 hours; a retention need not
// care).
const day = 24 * time.Hour

// parseDays is time.ParseDuration that also takes days: "7d", "1.5d",
// "1d12h", "-2d". Its error says which units exist.
func parseDays(s string) (time.Duration, error) {
	rest, neg := strings.CutPrefix(s, "-")
	if !neg {
		rest = strings.TrimPrefix(rest, "+")
	}
	var days time.Duration
	if i := strings.IndexByte(rest, 'd'); i > 0 {
		n, err := strconv.ParseFloat(rest[:i], 64)
		if err != nil || n < 0 || n > 100_000 {
			return 0, durationError(s)
		}
		days, rest = time.Duration(n*float64(day)), rest[i+1:]
	}
	var d time.Duration
	if rest != "" || days == 0 {
		var err error
		if d, err = time.ParseDuration(rest); err != nil || d < 0 {
			return 0, durationError(s)
		}
	}
	d += days
	if neg {
		d = -d
	}
	return d, nil
}

func durationError(s string) error {
	return fmt.Errorf("%q is not a duration: write a number and a unit, d, h, m or s, such as 7d, 36h, 90m or 1h30m", s)
}

// daysValue is a duration flag that also takes days (see parseDays).
type daysValue struct{ inner flag.Value }

func (v daysValue) Set(s string) error {
	d, err := parseDays(s)
	if err != nil {
		return err
	}
	return v.inner.Set(d.String())
}

func (v daysValue) String() string {
	if v.inner == nil {
		return "0s" // the zero value, which flag's usage asks for
	}
	return v.inner.String()
}

func (v daysValue) Get() any { return v.inner.(flag.Getter).Get() }

// acceptDays makes every duration flag of fs take days too, so that
// --older-than 30d or --expires-in 90d mean what they say.
func acceptDays(fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		if g, ok := f.Value.(flag.Getter); ok {
			if _, isDuration := g.Get().(time.Duration); isDuration {
				if _, done := f.Value.(daysValue); !done {
					f.Value = daysValue{f.Value}
				}
			}
		}
	})
}
