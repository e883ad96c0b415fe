package postgres

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/pgtest"
	"github.com/cdnapi/cdnapi/internal/storetest"
)

// With a read replica, the lists and Region read from it and everything
// else goes to the primary: stopping the replica fails exactly the reads,
// and bringing it back heals them without reopening the Store.
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

	fra := cdnapi.Region{Code: "FRA1", Name: "Frankfurt", Zone: "eu-central", Country: "DE", Status: cdnapi.StatusOperational}
	if err := storetest.Writer(s).PutRegions(ctx, []cdnapi.Region{fra}); err != nil {
		t.Fatal(err)
	}
	if err := storetest.Writer(s).PutFiles(ctx, []cdnapi.File{file("fil_1", t0)}); err != nil {
		t.Fatal(err)
	}
	wait()
	if ids, err := listIDs(); err != nil || !slices.Equal(ids, []string{"fil_1"}) {
		t.Fatalf("ListFiles = %q, %v; want fil_1", ids, err)
	}

	if err := replica.Stop(); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := s.Ping(short); err == nil {
		t.Error("Ping succeeded with the replica down")
	}
	if _, err := listIDs(); err == nil {
		t.Error("ListFiles succeeded with the replica down")
	}
	if _, err := s.Region(short, "FRA1"); err == nil {
		t.Error("Region succeeded with the replica down")
	}
	// The primary still takes writes and serves what must be current.
	if err := s.pingPrimary(short); err != nil {
		t.Errorf("pingPrimary: %v", err)
	}
	if err := storetest.Writer(s).PutFiles(ctx, []cdnapi.File{file("fil_2", t0.Add(time.Second))}); err != nil {
		t.Errorf("PutFiles with the replica down: %v", err)
	}
	if _, err := s.CursorSecret(short); err != nil {
		t.Errorf("CursorSecret with the replica down: %v", err)
	}
	if _, err := s.ComponentOverrides(short); err != nil {
		t.Errorf("ComponentOverrides with the replica down: %v", err)
	}

	if err := replica.Restart(); err != nil {
		t.Fatal(err)
	}
	wait()
	if err := s.Ping(ctx); err != nil {
		t.Errorf("Ping after the replica is back: %v", err)
	}
	if ids, err := listIDs(); err != nil || !slices.Equal(ids, []string{"fil_2", "fil_1"}) {
		t.Errorf("ListFiles after the replica is back = %q, %v; want fil_2, fil_1", ids, err)
	}
}
