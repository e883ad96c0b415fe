package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/cdnapi/cdnapi"
)

const statusSynopsis = `status list | set NAME STATUS [--until D|T] [--message TEXT] | clear NAME  [--db DSN]

Operators put a component into a status by hand, for example for maintenance;
it holds until --until, or until cleared. Run "cdnapi status set --help" for
the details of set.`

// statusSynopses are the usages of status's subcommands.
var statusSynopses = map[string]string{
	"list": `status list  [--db DSN]

Lists the components and the status an operator set for each, if any, with
its end. A component without one is measured by serve.`,
	"set": `status set NAME STATUS [--until D|T] [--message TEXT]  [--db DSN]

Puts a component into a status by hand, for example for maintenance. It holds
until --until, given as a duration from now (--until 2h) or an RFC 3339 time,
or until cleared. A status other than operational opens an incident on the
status page, with --message as its text (one line, no control characters).
Components: API, "Upload Service", Storage, "Virus Scanning". Statuses:
operational, degraded_performance, partial_outage, major_outage,
under_maintenance.`,
	"clear": `status clear NAME  [--db DSN]

Removes the status an operator set for a component; serve measures it again.`,
}

// maxMessage is the longest --message: a sentence or two for a status page.
const maxMessage = 500

func runStatus(ctx context.Context, env *environment, args []string) error {
	fs := newSubcommandFlagSet("status", statusSynopsis, statusSynopses, args, env.stdout)
	db := addStoreFlags(fs, fewWrites)
	until := fs.String("until", "", untilHelp)
	message := fs.String("message", "", "with set: what people are told about it, shown with its incident")
	args, err := parseArgs(fs, args, env.getenv)
	if err != nil {
		return err
	}
	op, err := parseStatusArgs(args, *until, time.Now())
	if err != nil {
		return err
	}
	if *message != "" && op.verb != "set" {
		return usageError{"status: --message goes with set"}
	}
	if utf8.RuneCountInString(*message) > maxMessage || !utf8.ValidString(*message) {
		return usageError{fmt.Sprintf("status: --message must be valid UTF-8 of at most %d characters", maxMessage)}
	}
	// The message is written into /status's HTML and feed, and read on
	// terminals: like a name, it holds no control character (ESC, BS,
	// newlines, C1), which could redraw what is around it.
	if strings.ContainsFunc(*message, unicode.IsControl) {
		return usageError{"status: --message must not hold a control character (one line of text)"}
	}
	op.override.Message = *message
	st, err := db.openMigrated(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	switch op.verb {
	case "set":
		if err := st.SetComponentOverride(ctx, op.override); err != nil {
			return fmt.Errorf("set the status of %s: %w", op.override.Name, err)
		}
	case "clear":
		if err := st.ClearComponentOverride(ctx, op.override.Name); err != nil {
			return fmt.Errorf("clear the status of %s: %w", op.override.Name, err)
		}
	}
	overrides, err := st.ComponentOverrides(ctx)
	if err != nil {
		return fmt.Errorf("read component statuses: %w", err)
	}
	printOverrides(env, overrides, time.Now())
	return nil
}

// statusOp is a parsed status command.
type statusOp struct {
	verb     string // list, set or clear
	override cdnapi.ComponentOverride
}

// parseStatusArgs checks the words of a status command before anything is
// opened, so that a typo never reaches the database.
func parseStatusArgs(args []string, until string, now time.Time) (statusOp, error) {
	if len(args) == 0 {
		return statusOp{verb: "list"}, nil
	}
	want := map[string]int{"list": 1, "set": 3, "clear": 2}
	n, ok := want[args[0]]
	if !ok || len(args) != n {
		return statusOp{}, usageError{"status: want list, set NAME STATUS or clear NAME (see cdnapi status --help)"}
	}
	op := statusOp{verb: args[0]}
	if n == 1 {
		return op, nil
	}
	name := canonicalComponent(args[1])
	if name == "" {
		return op, usageError{fmt.Sprintf("status: unknown component %q; want one of %s", args[1], quoteAll(cdnapi.Components))}
	}
	op.override = cdnapi.ComponentOverride{Name: name, UpdatedAt: now.UTC().Truncate(time.Second)}
	if op.verb == "clear" {
		if until != "" {
			return op, usageError{"status: --until goes with set"}
		}
		return op, nil
	}
	op.override.Status = cdnapi.Status(args[2])
	if !op.override.Status.Valid() {
		return op, usageError{fmt.Sprintf("status: unknown status %q; want one of %s", args[2], quoteAll(cdnapi.Statuses))}
	}
	if until != "" {
		t, err := parseUntil("status", until, now)
		if err != nil {
			return op, err
		}
		op.override.Until = t
	}
	return op, nil
}

// canonicalComponent returns the component named name, in any case, or "".
func canonicalComponent(name string) string {
	for _, c := range cdnapi.Components {
		if strings.EqualFold(c, name) {
			return c
		}
	}
	return ""
}

func quoteAll[S ~string](values []S) string {
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = fmt.Sprintf("%q", v)
	}
	return strings.Join(q, ", ")
}

// printOverrides shows every component and the status an operator set for
// it, if any; a component without one is measured by serve.
func printOverrides(env *environment, overrides []cdnapi.ComponentOverride, now time.Time) {
	tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "COMPONENT\tSET STATUS\tUNTIL")
	for _, name := range cdnapi.Components {
		i := slices.IndexFunc(overrides, func(o cdnapi.ComponentOverride) bool { return o.Name == name })
		switch {
		case i < 0 || !overrides[i].Active(now):
			fmt.Fprintf(tw, "%s\t-\t-\n", name)
		case overrides[i].Until.IsZero():
			fmt.Fprintf(tw, "%s\t%s\tcleared\n", name, overrides[i].Status)
		default:
			fmt.Fprintf(tw, "%s\t%s\t%s\n", name, overrides[i].Status, cdnapi.Timestamp(overrides[i].Until))
		}
	}
	tw.Flush()
}
