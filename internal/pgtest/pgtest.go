// Package pgtest starts throwaway PostgreSQL clusters for tests: initdb in a
// temporary directory, a postgres server on a free 127.0.0.1 port (and a Unix
// socket in that directory), tuned for speed rather than durability, and torn
// down afterwards.
//
// Most tests share one cluster per test binary and take a fresh database each:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
//	func TestSomething(t *testing.T) {
//		dsn := pgtest.NewDatabase(t) // CREATE DATABASE now, DROP in t.Cleanup
//		...
//	}
//
// NewSchema is cheaper still: a fresh schema in one shared database, for
// suites that want a new store per case. Tests that stop or break the server
// take a cluster of their own with Start, and tests of replication add a
// streaming replica with StartReplica.
//
// PostgreSQL refuses to run as root. When the test runs as root, every
// PostgreSQL program runs as the "postgres" OS user instead, in directories
// that user owns.
//
// When the PostgreSQL programs are missing the tests skip, except when the
// environment variable CI is "true": there PostgreSQL tests must never skip
// silently, so they fail.
package pgtest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Cluster is a running (or stopped) throwaway PostgreSQL server and its data
// directory. Its methods are safe for concurrent use.
type Cluster struct {
	env     *environment
	dir     string   // owned by the server's OS user; holds data/, the socket and the log
	port    int      // TCP port on 127.0.0.1, also the number in the socket's name
	primary *Cluster // set on a replica: the cluster it streams from

	schemaDB struct { // the database of NewSchema, created on first use
		once sync.Once
		err  error
	}

	mu  sync.Mutex
	srv *server // nil while stopped
}

// shared is the cluster of the test binary, started by the first Shared.
var shared struct {
	once sync.Once
	c    *Cluster
	err  error
}

// dbSeq numbers the databases of this process; each cluster's names are
// unique because they come from one counter.
var dbSeq atomic.Int64

// Main runs the tests of m and then stops the shared cluster, if a test
// started it. Use it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
// Without Main the shared server still ends with the test binary (it is a
// child process with a parent-death signal), but its directory stays behind.
func Main(m *testing.M) int {
	code := m.Run()
	if shared.c != nil {
		if err := shared.c.destroy(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// Shared returns the cluster shared by every test of this binary, starting it
// on first use. Tests must not stop it; take a cluster of your own with Start
// for that. It skips tb when PostgreSQL is not installed, or fails it when
// CI=true.
func Shared(tb testing.TB) *Cluster {
	tb.Helper()
	env := requireEnvironment(tb)
	shared.once.Do(func() {
		shared.c, shared.err = newCluster(env)
	})
	if shared.err != nil {
		tb.Fatalf("pgtest: start shared cluster: %v", shared.err)
	}
	return shared.c
}

// NewDatabase creates an empty database on the shared cluster and returns its
// DSN. The database is dropped when tb ends.
func NewDatabase(tb testing.TB) string {
	tb.Helper()
	return Shared(tb).NewDatabase(tb)
}

// Start starts a new cluster that belongs to tb alone: tb may stop, restart
// and break it. It is stopped and deleted when tb ends. It skips tb when
// PostgreSQL is not installed, or fails it when CI=true.
func Start(tb testing.TB) *Cluster {
	tb.Helper()
	env := requireEnvironment(tb)
	c, err := newCluster(env)
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	tb.Cleanup(func() {
		if err := c.destroy(); err != nil {
			tb.Errorf("pgtest: %v", err)
		}
	})
	return c
}

// newCluster initialises a data directory and starts a server on it.
func newCluster(env *environment) (*Cluster, error) {
	dir, err := env.makeDir("pgtest-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{env: env, dir: dir}
	if err := env.initdb(c.dataDir()); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := c.startOnFreePort(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return c, nil
}

// Port returns the TCP port the server listens on at 127.0.0.1. The Unix
// socket in SocketDir carries the same number.
func (c *Cluster) Port() int { return c.port }

// SocketDir returns the directory of the server's Unix socket.
func (c *Cluster) SocketDir() string { return c.dir }

// DSN returns the URL of database dbname on this cluster, over TCP on
// 127.0.0.1, as the superuser "postgres" (trust authentication).
func (c *Cluster) DSN(dbname string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, dbname)
}

// CreateDatabase creates an empty database and returns its name; it is
// dropped when tb ends. On a replica the database is created on the primary,
// and CreateDatabase returns once the replica has it too.
func (c *Cluster) CreateDatabase(tb testing.TB) string {
	tb.Helper()
	p := c
	if c.primary != nil {
		p = c.primary
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name := fmt.Sprintf("test_%d", dbSeq.Add(1))
	// The name comes from our counter, never from input, so quoting it is
	// enough; identifiers cannot be bound as parameters.
	if err := p.exec(ctx, "postgres", `CREATE DATABASE "`+name+`"`); err != nil {
		tb.Fatalf("pgtest: create database: %v", err)
	}
	tb.Cleanup(func() {
		if !p.Running() {
			return // a test stopped its own cluster; nothing to drop
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		// FORCE ends sessions a test left open, such as a pool not closed.
		if err := p.exec(ctx, "postgres", `DROP DATABASE IF EXISTS "`+name+`" WITH (FORCE)`); err != nil {
			tb.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	if c != p {
		if err := c.WaitReplay(ctx); err != nil {
			tb.Fatalf("pgtest: %v", err)
		}
	}
	return name
}

// NewDatabase creates an empty database, like CreateDatabase, and returns its
// DSN.
func (c *Cluster) NewDatabase(tb testing.TB) string {
	tb.Helper()
	return c.DSN(c.CreateDatabase(tb))
}

// Running reports whether the server is up (started and not stopped).
func (c *Cluster) Running() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.srv != nil
}

// Stop shuts the server down (fast shutdown: open sessions are ended) and
// waits for it to exit. The data directory is kept, so Restart can bring the
// same cluster back. Stopping a stopped cluster does nothing.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.srv == nil {
		return nil
	}
	err := c.srv.stop()
	c.srv = nil
	return err
}

// Restart starts the server again on the same port and data, stopping it
// first if it is running, and returns once it accepts connections.
func (c *Cluster) Restart() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.srv != nil {
		if err := c.srv.stop(); err != nil {
			return err
		}
		c.srv = nil
	}
	srv, err := c.env.startServer(c.dir, c.port)
	if err != nil {
		return err
	}
	c.srv = srv
	return nil
}

// startOnFreePort picks a free port and starts the server on it. Another
// process may take the port between the pick and the server's bind, so a
// failed start is tried again on another port.
func (c *Cluster) startOnFreePort() error {
	var err error
	for range 3 {
		if c.port, err = freePort(); err != nil {
			return err
		}
		if err = c.Restart(); err == nil {
			return nil
		}
	}
	return err
}

// destroy stops the server and deletes its directory.
func (c *Cluster) destroy() error {
	stopErr := c.Stop()
	if err := os.RemoveAll(c.dir); err != nil {
		return fmt.Errorf("remove %s: %w", c.dir, err)
	}
	return stopErr
}

// dataDir returns the cluster's PGDATA.
func (c *Cluster) dataDir() string { return c.dir + "/data" }

// exec runs one statement on database dbname over a short-lived connection.
func (c *Cluster) exec(ctx context.Context, dbname, sql string, args ...any) error {
	conn, err := pgx.Connect(ctx, c.DSN(dbname))
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, sql, args...)
	return err
}
