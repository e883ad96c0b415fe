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
