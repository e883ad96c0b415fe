package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"strings"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/postgres"
	"github.com/cdnapi/cdnapi/internal/sqlite"
)

// defaultDSN is the embedded default: a SQLite file in the working directory.
const defaultDSN = "sqlite:cdnapi.db"

// store is a cdnapi.Store, with its API keys and status history, that can also bring its
// schema up to date.
type store interface {
	cdnapi.Store
	cdnapi.KeyStore
	cdnapi.StatusHistory
	// Migrate applies the migrations the database lacks. It refuses a
	// database whose schema is newer than this binary.
	Migrate(ctx context.Context) error
}

// storeFlags are the flags that choose and tune the store.
type storeFlags struct {
	dsn      *string
	readDSN  *string // nil for commands that only write
	maxConns *int
	logger   *slog.Logger // nil discards the store's own log lines
}

// addStoreFlags registers --db on fs and, for serve, --db-read and
// --db-max-conns.
func addStoreFlags(fs *flag.FlagSet, serving bool) storeFlags {
	f := storeFlags{dsn: fs.String("db", defaultDSN, "database: sqlite:PATH, a bare PATH, or postgres://…")}
	if serving {
		f.readDSN = fs.String("db-read", "", "PostgreSQL read replica that serves the lists while it answers, the --db primary while it does not (optional; writes and the cursor secret use --db)")
		f.maxConns = fs.Int("db-max-conns", 0, "PostgreSQL: most connections per pool (default: max(4, CPUs))")
	}
	return f
}

// open opens the store the flags name: "sqlite:PATH" or a bare PATH for
// SQLite, a postgres:// or postgresql:// URL for PostgreSQL.
func (f storeFlags) open(ctx context.Context) (store, error) {
	dsn := *f.dsn
	var readDSN string
	var maxConns int
	if f.readDSN != nil {
		readDSN, maxConns = *f.readDSN, *f.maxConns
	}
	if isPostgres(dsn) {
		if readDSN != "" && !isPostgres(readDSN) {
			return nil, usageError{"--db-read must be a postgres:// URL"}
		}
		if maxConns < 0 || maxConns > 1<<15 {
			return nil, usageError{"--db-max-conns must be from 0 to 32768"}
		}
		st, err := postgres.Open(ctx, dsn, postgres.Options{ReadDSN: readDSN, MaxConns: int32(maxConns), Logger: f.logger})
		if err != nil {
			return nil, usageError{fmt.Sprintf("--db: %v", err)}
		}
		return st, nil
	}
	if readDSN != "" {
		return nil, usageError{"--db-read needs a PostgreSQL --db; SQLite has no replicas"}
	}
	path := strings.TrimPrefix(dsn, "sqlite:")
	if path == "" {
		return nil, usageError{"--db: give sqlite:PATH, a file path, or postgres://…"}
	}
	if i := strings.Index(path, "://"); i >= 0 {
		return nil, usageError{fmt.Sprintf("--db: unknown scheme %q; use sqlite:PATH or postgres://…", path[:i])}
	}
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dsn, err)
	}
	return st, nil
}

// openMigrated opens the store and brings its schema up to date, as every
// command but migrate does before its work.
func (f storeFlags) openMigrated(ctx context.Context) (store, error) {
	st, err := f.open(ctx)
	if err != nil {
		return nil, err
	}
	if err := st.Migrate(ctx); err != nil {
		st.Close()
		return nil, fmt.Errorf("migrate %s: %w", redactDSN(*f.dsn), err)
	}
	return st, nil
}

func isPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// redactDSN returns dsn without a password, for messages and logs: the
// password of its user part and the password and sslpassword parameters,
// which libpq and pgx also read, become "xxxxx". A DSN that does not parse
// is shown as its scheme only, since where its password is cannot be told.
func redactDSN(dsn string) string {
	if !isPostgres(dsn) {
		return dsn // a SQLite path holds no password
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return dsn[:strings.Index(dsn, "://")] + "://…"
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	q := u.Query()
	for _, k := range []string{"password", "sslpassword"} {
		if q.Has(k) {
			q.Set(k, "xxxxx")
			u.RawQuery = q.Encode()
		}
	}
	return u.String()
}
