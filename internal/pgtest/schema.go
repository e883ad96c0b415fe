package pgtest

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// schemaDatabase is the database, one per cluster, that holds the schemas of
// NewSchema.
const schemaDatabase = "pgtest_schemas"

// NewSchema creates an empty schema on the shared cluster and returns a DSN
// whose search_path is that schema; it is dropped when tb ends. See
// Cluster.NewSchema.
func NewSchema(tb testing.TB) string {
	tb.Helper()
	return Shared(tb).NewSchema(tb)
}

// NewSchema creates an empty schema and returns a DSN whose search_path is
// that schema alone, so that everything a client creates without naming a
// schema lands in it. The schema is dropped when tb ends.
//
// A schema costs milliseconds where a database costs a copy of template1,
// so suites that want a fresh store per case take schemas. The schemas
// share one database, and with it anything database-wide, such as advisory
// locks. On a replica the schema is created on the primary, and NewSchema
// returns once the replica has it too.
func (c *Cluster) NewSchema(tb testing.TB) string {
	tb.Helper()
	p := c
	if c.primary != nil {
		p = c.primary
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p.schemaDB.once.Do(func() {
		p.schemaDB.err = p.exec(ctx, "postgres", `CREATE DATABASE `+schemaDatabase)
	})
	if p.schemaDB.err != nil {
		tb.Fatalf("pgtest: create database for schemas: %v", p.schemaDB.err)
	}
	name := fmt.Sprintf("test_%d", dbSeq.Add(1))
	// The name comes from our counter, never from input.
	if err := p.exec(ctx, schemaDatabase, `CREATE SCHEMA `+name); err != nil {
		tb.Fatalf("pgtest: create schema: %v", err)
	}
	tb.Cleanup(func() {
		if !p.Running() {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := p.exec(ctx, schemaDatabase, `DROP SCHEMA IF EXISTS `+name+` CASCADE`); err != nil {
			tb.Errorf("pgtest: drop schema %s: %v", name, err)
		}
	})
	if c != p {
		if err := c.WaitReplay(ctx); err != nil {
			tb.Fatalf("pgtest: %v", err)
		}
	}
	return c.DSN(schemaDatabase) + "&search_path=" + name
}
