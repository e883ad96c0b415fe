package main

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/sqlite"
)

// defaultDSN is the embedded default: a SQLite file in the working directory.
const defaultDSN = "sqlite:cdnapi.db"

// store is a cdnapi.Store that can also bring its schema up to date.
type store interface {
	cdnapi.Store
	// Migrate applies the migrations the database lacks.
	Migrate(ctx context.Context) error
}

// openStore opens the store a DSN names: "sqlite:PATH" or a bare PATH for
// SQLite.
func openStore(ctx context.Context, dsn string) (store, error) {
	switch {
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		return nil, usageError{"--db: PostgreSQL is not supported yet"}
	case dsn == "", dsn == "sqlite:":
		return nil, usageError{"--db: give sqlite:PATH or a file path"}
	}
	path := strings.TrimPrefix(dsn, "sqlite:")
	if i := strings.Index(path, "://"); i >= 0 {
		return nil, usageError{fmt.Sprintf("--db: unknown scheme %q; use sqlite:PATH or postgres://…", path[:i])}
	}
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dsn, err)
	}
	return st, nil
}

// redactDSN returns dsn without a password, for messages and logs.
func redactDSN(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.User == nil {
		return dsn
	}
	return u.Redacted()
}
