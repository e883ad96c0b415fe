package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cdnapi/cdnapi/internal/postgres"
)

const migrateSynopsis = `migrate [--db DSN]

Brings the database's schema up to date, and prints each migration applied
(its version, name and time), or "already at version N". It creates a
SQLite database that does not exist yet, and says so; serve and seed do the
same, every other command refuses a database that is not there.`

func runMigrate(ctx context.Context, env *environment, args []string) error {
	fs := newFlagSet("migrate", migrateSynopsis, env.stdout)
	db := addStoreFlags(fs, bulkWrites)
	if err := parseFlags(fs, args, env.getenv); err != nil {
		return err
	}
	st, err := db.create(ctx, func(path string) { fmt.Fprintf(env.stdout, "created %s\n", path) })
	if err != nil {
		return err
	}
	defer st.Close()
	res, err := st.ApplyMigrations(ctx)
	for _, m := range res.Applied {
		fmt.Fprintf(env.stdout, "applied %05d %s in %s\n", m.Version, m.Name, m.Took.Round(time.Millisecond))
	}
	if err != nil {
		if line, ok := postgres.ConnectFailure(err); ok {
			return errors.New(line)
		}
		return fmt.Errorf("migrate %s: %w", redactDSN(*db.dsn), err)
	}
	if len(res.Applied) == 0 {
		fmt.Fprintf(env.stdout, "%s is already at version %d\n", describeDB(*db.dsn), res.Version)
		return nil
	}
	fmt.Fprintf(env.stdout, "%s is now at version %d\n", describeDB(*db.dsn), res.Version)
	return nil
}
