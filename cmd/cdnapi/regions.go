package main

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/cdnapi/cdnapi"
)

const regionsSynopsis = `regions [list] | set-status CODE STATUS [--until D|T]  [--db DSN]

Lists the points of presence, or sets the status of one, for example while it
is under maintenance. Run "cdnapi regions set-status --help" for the details.
Regions are added with cdnapi ingest regions.`

// regionsSynopses are the usages of regions's subcommands.
var regionsSynopses = map[string]string{
	"list": `regions list  [--db DSN]

Lists the points of presence with the status each is in now. A status set
with --until shows its end; one whose end has passed shows "expired" and the
status that ended: the region is operational again.`,
	"set-status": `regions set-status CODE STATUS [--until D|T]  [--db DSN]

Sets the status of a point of presence, for example under_maintenance while
it is worked on. With --until, given as a duration from now (--until 2h) or
an RFC 3339 time, the region is operational again from then on, without
anything else to run; without it, the status holds until set again.
A status other than operational wins over serve --region-probe while it
holds; operational with --until holds a probed region operational until then.
Statuses: operational, degraded_performance, partial_outage, major_outage,
under_maintenance.`,
}

// regionsConfig is what regions' arguments and their CDNAPI_* variables
// say.
type regionsConfig struct {
	verb   string // list or set-status
	code   string // set-status's region
	status cdnapi.Status
	until  time.Time // set-status's end of the status, or zero
	db     storeFlags
}

// parseRegionsConfig parses regions' arguments and checks the words before
// anything is opened, so that a typo never reaches the database.
func parseRegionsConfig(env *environment, args []string) (regionsConfig, error) {
	var c regionsConfig
	fs := newSubcommandFlagSet("regions", regionsSynopsis, regionsSynopses, args, env.stdout)
	c.db = addStoreFlags(fs, fewWrites)
	untilFlag := fs.String("until", "", untilHelp)
	args, err := parseArgs(fs, args, env.getenv)
	if err != nil {
		return c, err
	}
	switch {
	case len(args) == 0, len(args) == 1 && args[0] == "list":
		// Bare regions lists, as bare status does.
		if *untilFlag != "" {
			return c, usageError{"regions: --until goes with set-status"}
		}
	case len(args) == 3 && args[0] == "set-status":
		c.code, c.status = args[1], cdnapi.Status(args[2])
		if !cdnapi.ValidRegionCode(c.code) {
			return c, usageError{fmt.Sprintf("regions: region code %q: want three upper-case letters and a digit, such as FRA1", c.code)}
		}
		if !c.status.Valid() {
			return c, usageError{fmt.Sprintf("regions: unknown status %q; want one of %s", c.status, quoteAll(cdnapi.Statuses))}
		}
		if *untilFlag != "" {
			if c.until, err = parseUntil("regions", *untilFlag, time.Now()); err != nil {
				return c, err
			}
		}
	default:
		return c, usageError{"regions: want list or set-status CODE STATUS (see cdnapi regions --help)"}
	}
	c.verb = "list"
	if len(args) > 0 {
		c.verb = args[0]
	}
	return c, nil
}

// runRegions is the regions command: it lists the regions, or sets the
// status of one and shows it.
func runRegions(ctx context.Context, env *environment, args []string) error {
	cfg, err := parseRegionsConfig(env, args)
	if err != nil {
		return err
	}
	st, err := cfg.db.openMigrated(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	if cfg.verb == "list" {
		regions, err := st.ListRegions(ctx)
		if err != nil {
			return fmt.Errorf("regions: %w", err)
		}
		printRegions(env, regions)
		return nil
	}
	if err := st.SetRegionStatus(ctx, cfg.code, cfg.status, cfg.until); errors.Is(err, cdnapi.ErrNotFound) {
		return fmt.Errorf("regions: there is no region %s (see cdnapi regions list)", cfg.code)
	} else if err != nil {
		return fmt.Errorf("regions: set the status of %s: %w", cfg.code, err)
	}
	r, err := st.Region(ctx, cfg.code)
	if err != nil {
		return fmt.Errorf("regions: read %s back: %w", cfg.code, err)
	}
	printRegions(env, []cdnapi.Region{r})
	return nil
}

// printRegions shows regions as a table, with the end of a status that has
// one, and a status whose end has passed as expired.
func printRegions(env *environment, regions []cdnapi.Region) {
	tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CODE\tNAME\tZONE\tCOUNTRY\tSTATUS\tUNTIL")
	for _, r := range regions {
		until := "-"
		switch {
		case r.Expired != "":
			until = fmt.Sprintf("expired %s (was %s)", cdnapi.Timestamp(r.Until), r.Expired)
		case !r.Until.IsZero():
			until = cdnapi.Timestamp(r.Until)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Code, r.Name, r.Zone, r.Country, r.Status, until)
	}
	tw.Flush()
}
