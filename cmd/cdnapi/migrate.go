package main

import (
	"context"
	"fmt"
)

func runMigrate(ctx context.Context, env *environment, args []string) error {
	fs := newFlagSet("migrate", "migrate [--db DSN]", env.stdout)
	db := addStoreFlags(fs, false)
	if err := parseFlags(fs, args, env.getenv); err != nil {
		return err
	}
	st, err := db.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		return fmt.Errorf("migrate %s: %w", redactDSN(*db.dsn), err)
	}
	fmt.Fprintf(env.stdout, "schema of %s is up to date\n", redactDSN(*db.dsn))
	return nil
}
