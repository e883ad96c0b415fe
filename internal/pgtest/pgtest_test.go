package pgtest

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// connect opens a connection that is closed when t ends.
func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect %s: %v", dsn, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func mustExec(t *testing.T, conn *pgx.Conn, sql string, args ...any) {
	t.Helper()
	if _, err := conn.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func count(t *testing.T, conn *pgx.Conn, table string) int {
	t.Helper()
	var n int
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		t.Fatalf("count %s: %v", table, err)
	}
	return n
}

func TestNewDatabaseIsFreshAndWritable(t *testing.T) {
	t.Parallel()
	a := connect(t, NewDatabase(t))
	b := connect(t, NewDatabase(t))
	mustExec(t, a, `CREATE TABLE t (v int)`)
	mustExec(t, a, `INSERT INTO t VALUES (1), (2)`)
	if n := count(t, a, "t"); n != 2 {
		t.Errorf("rows in t = %d, want 2", n)
	}
	var exists bool
	if err := b.QueryRow(context.Background(), `SELECT to_regclass('t') IS NOT NULL`).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if exists {
		t.Error("a second database sees the first one's table")
	}
}

func TestDatabaseIsDroppedAfterTest(t *testing.T) {
	var name string
	t.Run("inner", func(t *testing.T) {
		name = Shared(t).CreateDatabase(t)
	})
	conn := connect(t, Shared(t).DSN("postgres"))
	var n int
	err := conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_database WHERE datname = $1`, name).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("database %s still exists after its test ended", name)
	}
}

// The schema must not depend on the database's default collation, so the
// clusters default to a linguistic one where the build allows.
func TestDefaultCollationIsLinguistic(t *testing.T) {
	t.Parallel()
	conn := connect(t, NewDatabase(t))
	var less bool
	// Byte order puts 'B' (0x42) before 'a' (0x61); en-US does not.
	if err := conn.QueryRow(context.Background(), `SELECT 'a' < 'B'`).Scan(&less); err != nil {
		t.Fatal(err)
	}
	if !less {
		t.Skip("this PostgreSQL build has no ICU; the cluster collates in byte order")
	}
}

func TestStopAndRestartKeepData(t *testing.T) {
	t.Parallel()
	c := Start(t)
	dsn := c.NewDatabase(t)
	conn := connect(t, dsn)
	mustExec(t, conn, `CREATE TABLE t (v int)`)
	mustExec(t, conn, `INSERT INTO t VALUES (1)`)

	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if c.Running() {
		t.Error("Running() after Stop")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if conn, err := pgx.Connect(ctx, dsn); err == nil {
		conn.Close(ctx)
		t.Fatal("connected to a stopped cluster")
	}
	if err := c.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}

	if err := c.Restart(); err != nil {
		t.Fatal(err)
	}
	if n := count(t, connect(t, dsn), "t"); n != 1 {
		t.Errorf("rows after restart = %d, want 1", n)
	}
}

func TestReplicaFollowsPrimary(t *testing.T) {
	t.Parallel()
	primary := Start(t)
	replica := primary.StartReplica(t)
	if replica.Primary() != primary || primary.Primary() != nil {
		t.Fatal("Primary() does not link the replica to its primary")
	}
	name := replica.CreateDatabase(t) // created on the primary, replayed on the replica
	pc := connect(t, primary.DSN(name))
	rc := connect(t, replica.DSN(name))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	mustExec(t, pc, `CREATE TABLE t (v int)`)
	mustExec(t, pc, `INSERT INTO t VALUES (1)`)
	if err := replica.WaitReplay(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count(t, rc, "t"); n != 1 {
		t.Errorf("replica rows = %d, want 1", n)
	}
	if _, err := rc.Exec(ctx, `INSERT INTO t VALUES (2)`); err == nil {
		t.Error("the replica accepted a write")
	}

	// Writes made while the replica is down arrive once it is back.
	if err := replica.Stop(); err != nil {
		t.Fatal(err)
	}
	mustExec(t, pc, `INSERT INTO t VALUES (3)`)
	if err := replica.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := replica.WaitReplay(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count(t, connect(t, replica.DSN(name)), "t"); n != 2 {
		t.Errorf("replica rows after restart = %d, want 2", n)
	}
	if err := primary.WaitReplay(ctx); err == nil {
		t.Error("WaitReplay on a primary succeeded")
	}
}

// recorder is a testing.TB that records how a test would end instead of
// ending it.
type recorder struct {
	testing.TB
	fatal, skip bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Fatalf(string, ...any) { r.fatal = true }
func (r *recorder) Skipf(string, ...any)  { r.skip = true }

func TestMissingPostgreSQL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ci          string
		fatal, skip bool
	}{
		{"true", true, false},
		{"", false, true},
		{"false", false, true},
	}
	for _, tt := range tests {
		r := &recorder{TB: t}
		missing(r, errors.New("initdb not found"), tt.ci)
		if r.fatal != tt.fatal || r.skip != tt.skip {
			t.Errorf("CI=%q: fatal %v, skip %v; want %v, %v", tt.ci, r.fatal, r.skip, tt.fatal, tt.skip)
		}
	}
}

func TestNewSchemaIsolates(t *testing.T) {
	t.Parallel()
	a := connect(t, NewSchema(t))
	b := connect(t, NewSchema(t))
	mustExec(t, a, `CREATE TABLE t (v int)`)
	mustExec(t, a, `INSERT INTO t VALUES (1)`)
	if n := count(t, a, "t"); n != 1 {
		t.Errorf("rows in t = %d, want 1", n)
	}
	var exists bool
	if err := b.QueryRow(context.Background(), `SELECT to_regclass('t') IS NOT NULL`).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if exists {
		t.Error("a second schema sees the first one's table")
	}
}
