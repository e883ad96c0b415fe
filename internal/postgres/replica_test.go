package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/pgtest"
	"github.com/cdnapi/cdnapi/internal/storetest"
	"github.com/jackc/pgx/v5/pgxpool"
)

// With a read replica, the lists and Region read from it and everything
// else goes to the primary. Reads survive either server: with the replica
// stopped they come from the primary, with the primary stopped from the
// replica, and they go back to the replica when it returns, without
// reopening the Store.
func TestReadReplica(t *testing.T) {
	t.Parallel()
	primary := pgtest.Start(t)
	replica := primary.StartReplica(t)
	name := replica.CreateDatabase(t)
	s := openStore(t, primary.DSN(name), Options{ReadDSN: replica.DSN(name)})
	ctx := t.Context()
	wait := func() {
		t.Helper()
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := replica.WaitReplay(ctx); err != nil {
			t.Fatal(err)
		}
	}
	listIDs := func() ([]string, error) {
		files, err := s.ListFiles(ctx, cdnapi.FileQuery{Project: "default", Limit: 10})
		return fileIDs(files), err
	}
	// servedBy lists the files and tells which pool served the read.
	servedBy := func() (string, []string, error) {
		r, p := s.read.Stat().AcquireCount(), s.primary.Stat().AcquireCount()
		ids, err := listIDs()
		switch {
		case s.primary.Stat().AcquireCount() == p:
			return "replica", ids, err
		case s.read.Stat().AcquireCount() == r:
			return "primary", ids, err
		}
		return "both", ids, err
	}
	// eventually retries check for up to 30 s, a margin for a loaded machine.
	eventually := func(what string, check func() error) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			err := check()
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %v", what, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	fra := cdnapi.Region{Code: "FRA1", Name: "Frankfurt", Zone: "eu-central", Country: "DE", Status: cdnapi.StatusOperational}
	if err := storetest.Writer(s).PutRegions(ctx, []cdnapi.Region{fra}); err != nil {
		t.Fatal(err)
	}
	if err := storetest.Writer(s).PutFiles(ctx, []cdnapi.File{file("fil_1", t0)}); err != nil {
		t.Fatal(err)
	}
	wait()
	if by, ids, err := servedBy(); err != nil || by != "replica" || !slices.Equal(ids, []string{"fil_1"}) {
		t.Fatalf("ListFiles = %q, %v, from the %s; want fil_1 from the replica", ids, err, by)
	}

	// The replica stops: every read is answered, from the primary, the
	// first one included.
	if err := replica.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := storetest.Writer(s).PutFiles(ctx, []cdnapi.File{file("fil_2", t0.Add(time.Second))}); err != nil {
		t.Errorf("PutFiles with the replica down: %v", err)
	}
	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if ids, err := listIDs(); err != nil || !slices.Equal(ids, []string{"fil_2", "fil_1"}) {
		t.Errorf("ListFiles with the replica down = %q, %v; want fil_2, fil_1 from the primary", ids, err)
	}
	if err := s.Ping(short); !errors.Is(err, cdnapi.ErrDegraded) {
		t.Errorf("Ping with the replica down = %v; want it degraded (the reads stand on the primary alone)", err)
	}
	if _, err := s.Region(short, "FRA1"); err != nil {
		t.Errorf("Region with the replica down: %v", err)
	}
	if _, err := s.ListAssets(short, cdnapi.AssetQuery{Limit: 5}); err != nil {
		t.Errorf("ListAssets with the replica down: %v", err)
	}
	if _, err := s.ListIncidents(short, cdnapi.IncidentQuery{Limit: 5}); err != nil {
		t.Errorf("ListIncidents with the replica down: %v", err)
	}
	if by, _, err := servedBy(); err != nil || by != "primary" {
		t.Errorf("a read with the replica known down went to the %s (%v); want the primary alone", by, err)
	}

	// The replica returns: reads go back to it by themselves.
	if err := replica.Restart(); err != nil {
		t.Fatal(err)
	}
	wait()
	eventually("reads go back to the replica", func() error {
		by, ids, err := servedBy()
		if err != nil || by != "replica" || !slices.Equal(ids, []string{"fil_2", "fil_1"}) {
			return fmt.Errorf("ListFiles = %q, %v, from the %s", ids, err, by)
		}
		return nil
	})

	// The primary stops: reads go on from the replica, writes fail.
	if err := primary.Stop(); err != nil {
		t.Fatal(err)
	}
	if ids, err := listIDs(); err != nil || !slices.Equal(ids, []string{"fil_2", "fil_1"}) {
		t.Errorf("ListFiles with the primary down = %q, %v; want fil_2, fil_1 from the replica", ids, err)
	}
	if err := s.Ping(short); err != nil {
		t.Errorf("Ping with the primary down: %v", err)
	}
	if err := storetest.Writer(s).PutFiles(short, []cdnapi.File{file("fil_3", t0.Add(2*time.Second))}); err == nil {
		t.Error("PutFiles succeeded with the primary down")
	}

	// Both stop: reads fail, and come back with the primary alone.
	if err := replica.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := listIDs(); err == nil {
		t.Error("ListFiles succeeded with both servers down")
	}
	if err := s.Ping(short); err == nil {
		t.Error("Ping succeeded with both servers down")
	}
	if err := primary.Restart(); err != nil {
		t.Fatal(err)
	}
	if ids, err := listIDs(); err != nil || !slices.Equal(ids, []string{"fil_2", "fil_1"}) {
		t.Errorf("ListFiles with only the primary back = %q, %v; want fil_2, fil_1", ids, err)
	}
}

// Reads fall back only when the server gave no answer: an answer that is an
// error is the caller's, and so is every error once its context has ended.
func TestUnanswered(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	for _, tt := range []struct {
		name string
		sql  string
		want bool
	}{
		{"a bad query", `SELECT no_such_column FROM files`, false},
		{"a statement timeout", `SET LOCAL statement_timeout = 1; SELECT pg_sleep(1)`, false},
		{"the server shutting down", `DO $$ BEGIN RAISE EXCEPTION USING ERRCODE = '57P01'; END $$`, true},
		{"a connection exception", `DO $$ BEGIN RAISE EXCEPTION USING ERRCODE = '08006'; END $$`, true},
	} {
		_, err := s.primary.Exec(ctx, tt.sql)
		if err == nil {
			t.Fatalf("%s: no error", tt.name)
		}
		if got := unanswered(ctx, err); got != tt.want {
			t.Errorf("%s (%v): unanswered = %v, want %v", tt.name, err, got, tt.want)
		}
	}

	// A server that is not there gives no answer; once the caller's
	// context has ended, neither does anything else.
	gone, err := Open(ctx, "postgres://postgres@127.0.0.1:1/none?sslmode=disable&connect_timeout=2", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer gone.Close()
	err = gone.primary.Ping(ctx)
	if err == nil || !unanswered(ctx, err) {
		t.Errorf("a refused connection (%v): unanswered = false, want true", err)
	}
	ended, cancel := context.WithCancel(ctx)
	cancel()
	if unanswered(ended, err) {
		t.Error("unanswered = true after the caller's context ended")
	}
}

// A server that stops ends the connections idle in a pool, and pgxpool
// checks one before handing it out only after a second of idleness: a
// standby that is stopped and back within that second must not leave them
// there, or each fails one more read, and with the primary down too that
// read has nowhere to go. Whether a read or the watcher saw the standby
// stop, its pool keeps no connection of before, and a read right after the
// standby's return and the primary's stop is answered.
func TestStandbyRestartLeavesNoEndedConns(t *testing.T) {
	t.Parallel()
	primary := pgtest.Start(t)
	replica := primary.StartReplica(t)
	name := replica.CreateDatabase(t)
	s := openStore(t, primary.DSN(name), Options{ReadDSN: replica.DSN(name)})
	ctx := t.Context()
	if err := storetest.Writer(s).PutFiles(ctx, []cdnapi.File{file("fil_1", t0)}); err != nil {
		t.Fatal(err)
	}
	restart := func() {
		t.Helper()
		if err := replica.Restart(); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := replica.WaitReplay(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// fill opens four connections in the standby's pool and leaves them idle.
	fill := func() {
		t.Helper()
		var conns []*pgxpool.Conn
		for range 4 {
			c, err := s.read.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
		}
		for _, c := range conns {
			c.Release()
		}
	}
	// ended counts the idle connections of the standby's pool that its
	// server has ended, without pgxpool's check on acquiring.
	ended := func() (n int) {
		for _, c := range s.read.AcquireAllIdle(ctx) {
			if c.Ping(ctx) != nil {
				n++
			}
			c.Release()
		}
		return n
	}
	waitRoute := func(what string, down bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for s.route.isDown() != down {
			if time.Now().After(deadline) {
				t.Fatalf("the watcher did not see the standby %s", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	// The watcher sees the standby stop; no read does.
	fill()
	if err := replica.Stop(); err != nil {
		t.Fatal(err)
	}
	waitRoute("stop", true)
	restart()
	if n := ended(); n != 0 {
		t.Errorf("after a stop seen by the watcher, the standby's pool kept %d ended connections", n)
	}
	waitRoute("return", false)

	// A read sees the standby stop; the primary stops as soon as the
	// standby is back, within a second of the standby's stop.
	fill()
	if err := replica.Stop(); err != nil {
		t.Fatal(err)
	}
	if ids, err := idsOf(s.ListFiles(ctx, cdnapi.FileQuery{Project: "default", Limit: 10})); err != nil || !slices.Equal(ids, []string{"fil_1"}) {
		t.Errorf("ListFiles with the standby down = %q, %v; want fil_1 from the primary", ids, err)
	}
	restart()
	if err := primary.Stop(); err != nil {
		t.Fatal(err)
	}
	for i := range 4 { // one per connection the standby's pool held
		if ids, err := idsOf(s.ListFiles(ctx, cdnapi.FileQuery{Project: "default", Limit: 10})); err != nil || !slices.Equal(ids, []string{"fil_1"}) {
			t.Errorf("read %d with the standby back and the primary down = %q, %v; want fil_1 from the standby", i+1, ids, err)
		}
	}
	if n := ended(); n != 0 {
		t.Errorf("after a stop seen by a read, the standby's pool kept %d ended connections", n)
	}
}

// idsOf returns the IDs of a list and its error.
func idsOf(files []cdnapi.File, err error) ([]string, error) { return fileIDs(files), err }
