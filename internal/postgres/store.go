// Package postgres is the cdnapi.Store on PostgreSQL, through jackc/pgx/v5
// and its pgxpool. It is the engine for running cdnapi as several stateless
// replicas: every process shares one primary for writes and, optionally, a
// streaming read replica that serves the lists.
//
// A Store holds a pool on the primary and, when Options.ReadDSN is set, a
// second pool on the read replica. The lists and Region read from the
// replica while it answers, and from the primary while it does not (see
// reads.go); every write, the cursor secret, the component overrides and
// the log followers' positions go to the primary, where a value just
// written is always visible. A list read
// from a lagging replica is as old as the replica, and no worse: cursors
// carry (created_at, id) positions, not row numbers, so they stay valid.
//
// Every list is a keyset range scan of an index that matches its ORDER BY
// (see the migrations and TestQueryPlans): no OFFSET and no COUNT.
//
// The schema is versioned with goose; the migrations are embedded in the
// binary. Open does not touch the schema: call Migrate before serving.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Options tunes a Store. The zero value is a sane default.
type Options struct {
	// ReadDSN, when set, is the DSN of a read replica (a hot standby of the
	// primary) that serves ListFiles, ListAssets, ListRegions and Region.
	ReadDSN string
	// MaxConns is the most connections each pool opens. Zero means
	// pgxpool's default: the number of CPUs, but at least 4.
	MaxConns int32
	// ConnectTimeout bounds dialling and authenticating one connection, so
	// that an unreachable server fails a call instead of stalling it until
	// its context ends. Zero means 5 seconds.
	ConnectTimeout time.Duration
	// StatementTimeout is the server's limit on one statement
	// (statement_timeout). Callers bound their calls with contexts; this
	// guards the server against statements whose caller is gone. Zero means
	// one minute. Migrate does not apply it.
	StatementTimeout time.Duration
	// Logger, when set, is told when reads leave the read replica for the
	// primary and when they come back.
	Logger *slog.Logger
}

const (
	defaultConnectTimeout   = 5 * time.Second
	defaultStatementTimeout = time.Minute
	applicationName         = "cdnapi"
)

// Store is a cdnapi.Store on PostgreSQL. It is safe for concurrent use, by
// any number of processes sharing the database.
type Store struct {
	primary *pgxpool.Pool // writes, settings, overrides
	read    *pgxpool.Pool // lists; the primary itself when no replica is set
	route   *readRoute    // where reads go now; nil when no replica is set
}

var _ cdnapi.Store = (*Store)(nil)

// Open returns a Store on the database at dsn (a postgres:// URL or a
// key=value connection string) and, when opts.ReadDSN is set, on that read
// replica. It checks the DSNs but does not connect: pools dial on first use,
// so a server that is down at start makes calls fail until it is back, and
// never makes Open hang. Call Ping to check the server, and Migrate before
// serving.
//
// Errors never include the DSN, which may hold a password.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = defaultConnectTimeout
	}
	if opts.StatementTimeout <= 0 {
		opts.StatementTimeout = defaultStatementTimeout
	}
	primary, err := newPool(ctx, dsn, opts)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	s := &Store{primary: primary, read: primary}
	if opts.ReadDSN != "" {
		cfg, err := poolConfig(opts.ReadDSN, opts)
		if err == nil {
			s.read, err = pgxpool.NewWithConfig(ctx, cfg)
		}
		if err != nil {
			primary.Close()
			return nil, fmt.Errorf("postgres: open read replica: %w", err)
		}
		log := opts.Logger
		if log == nil {
			log = slog.New(slog.DiscardHandler)
		}
		// The watcher outlives Open's context: it ends with Close.
		wctx, stop := context.WithCancel(context.WithoutCancel(ctx))
		s.route = &readRoute{log: log, pool: s.read, stop: stop, done: make(chan struct{})}
		go s.route.watch(wctx, cfg.ConnConfig.Copy())
	}
	return s, nil
}

// newPool returns an unconnected pool on dsn, tuned by opts.
func newPool(ctx context.Context, dsn string, opts Options) (*pgxpool.Pool, error) {
	cfg, err := poolConfig(dsn, opts)
	if err != nil {
		return nil, err
	}
	return pgxpool.NewWithConfig(ctx, cfg)
}

// poolConfig parses dsn and applies opts. pgx's own parse errors quote the
// connection string, password and all, so they are replaced.
func poolConfig(dsn string, opts Options) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, errors.New("the DSN is not a valid postgres:// URL or key=value connection string")
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	cc := cfg.ConnConfig
	cc.ConnectTimeout = opts.ConnectTimeout
	if cc.RuntimeParams == nil {
		cc.RuntimeParams = map[string]string{}
	}
	if _, ok := cc.RuntimeParams["application_name"]; !ok {
		cc.RuntimeParams["application_name"] = applicationName
	}
	cc.RuntimeParams["statement_timeout"] = strconv.FormatInt(opts.StatementTimeout.Milliseconds(), 10)
	// Times are compared and returned as instants; fixing the session's
	// zone keeps the server's rendering of them (in logs, in EXPLAIN) UTC.
	cc.RuntimeParams["timezone"] = "UTC"
	return cfg, nil
}

// Close closes both pools, waiting for connections in use to be returned.
// After Close every method returns an error.
func (s *Store) Close() error {
	if s.route != nil {
		s.route.close()
	}
	if s.read != s.primary {
		s.read.Close()
	}
	s.primary.Close()
	return nil
}

// Ping checks that the lists can be read within ctx: from the read replica
// when one is set and answers, else from the primary.
//
// It answers while either server answers, on purpose: Ping backs readiness
// and the status of Storage, which are about serving the read API. With
// the primary down, the lists still answer from the replica, with the
// replica down from the primary, and a load balancer that took every
// process out of service would turn the loss of one server into a read
// outage. While the replica does not answer, though, the error wraps
// cdnapi.ErrDegraded: the reads stand on the primary alone, and the status
// says so (degraded_performance) without taking the process out of
// service. The primary down is not reported here: reads do not need it,
// and writes say so themselves.
//
// It reads the newest file, asset and region the way the lists do, down
// their indexes to the table rows, so a relation that cannot be read shows
// here; each is one index probe whatever the size of the table
// (TestProbePlan).
func (s *Store) Ping(ctx context.Context) error {
	var file, asset, region *string
	err := s.reading(ctx, func(db *pgxpool.Pool) error {
		return db.QueryRow(ctx, probeQuery).Scan(&file, &asset, &region)
	})
	if err != nil {
		return fmt.Errorf("postgres: ping: %w", err)
	}
	if s.route != nil && s.route.isDown() {
		return fmt.Errorf("postgres: ping: %w: the read replica does not answer; reads go to the primary", cdnapi.ErrDegraded)
	}
	return nil
}

// probeQuery is the read of Ping.
const probeQuery = `SELECT
	(SELECT filename FROM files ORDER BY project, created_at DESC, id DESC LIMIT 1),
	(SELECT path FROM assets ORDER BY created_at DESC, id DESC LIMIT 1),
	(SELECT name FROM regions ORDER BY code LIMIT 1)`

// wholeSecondUTC is how every time is stored: the API shows whole seconds,
// and cursors carry whole seconds. timestamptz(0) would round half a second
// up; truncating here makes both engines agree on Go's Unix().
func wholeSecondUTC(t time.Time) time.Time { return time.Unix(t.Unix(), 0).UTC() }
