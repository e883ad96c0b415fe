package main

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/cdnapi/cdnapi"
)

const regionsSynopsis = `regions list | set-status CODE STATUS  [--db DSN]

Lists the points of presence, or sets the status of one, for example while it
is under maintenance. Statuses: operational, degraded_performance,
partial_outage, major_outage, under_maintenance. Regions are added with
cdnapi ingest regions.`

func runRegions(ctx context.Context, env *environment, args []string) error {
	fs := newFlagSet("regions", regionsSynopsis, env.stdout)
	db := addStoreFlags(fs, false)
	args, err := parseArgs(fs, args, env.getenv)
	if err != nil {
		return err
	}
	// Check the words before anything is opened, so that a typo never
	// reaches the database.
	switch {
	case len(args) == 1 && args[0] == "list":
	case len(args) == 3 && args[0] == "set-status":
		if !cdnapi.ValidRegionCode(args[1]) {
			return usageError{fmt.Sprintf("regions: region code %q: want three upper-case letters and a digit, such as FRA1", args[1])}
		}
		if !cdnapi.Status(args[2]).Valid() {
			return usageError{fmt.Sprintf("regions: unknown status %q; want one of %s", args[2], quoteAll(cdnapi.Statuses))}
		}
	default:
		return usageError{"regions: want list or set-status CODE STATUS (see cdnapi regions --help)"}
	}
	st, err := db.openMigrated(ctx)
	if err != nil {
		return err
	}
	defer st.Close()

	if args[0] == "list" {
		regions, err := st.ListRegions(ctx)
		if err != nil {
			return fmt.Errorf("regions: %w", err)
		}
		printRegions(env, regions)
		return nil
	}
	code, status := args[1], cdnapi.Status(args[2])
	if err := st.SetRegionStatus(ctx, code, status); errors.Is(err, cdnapi.ErrNotFound) {
		return fmt.Errorf("regions: there is no region %s (see cdnapi regions list)", code)
	} else if err != nil {
		return fmt.Errorf("regions: set the status of %s: %w", code, err)
	}
	r, err := st.Region(ctx, code)
	if err != nil {
		return fmt.Errorf("regions: read %s back: %w", code, err)
	}
	printRegions(env, []cdnapi.Region{r})
	return nil
}

// printRegions shows regions as a table.
func printRegions(env *environment, regions []cdnapi.Region) {
	tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CODE\tNAME\tZONE\tCOUNTRY\tSTATUS")
	for _, r := range regions {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Code, r.Name, r.Zone, r.Country, r.Status)
	}
	tw.Flush()
}
