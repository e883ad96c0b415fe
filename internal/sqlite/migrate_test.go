package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/storetest"
)

// errSchemaPending is returned by checkSchema when the database lacks
// migrations that this binary has; Migrate applies them.
var errSchemaPending = errors.New("sqlite: database schema is older than this binary; run migrate")

// schemaVersion returns the schema version of the database (0 when none is
// applied) and the newest version this binary knows.
func (s *Store) schemaVersion(ctx context.Context) (db, binary int64, err error) {
	p, err := s.provider()
	if err != nil {
		return 0, 0, fmt.Errorf("sqlite: schema version: %w", err)
	}
	db, binary, err = p.GetVersions(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("sqlite: schema version: %w", err)
	}
	return db, binary, nil
}

// checkSchema returns nil when the database schema is exactly the one this
// binary knows, ErrSchemaNewer (wrapped) when it is newer, and
// errSchemaPending (wrapped) when migrations are due.
func (s *Store) checkSchema(ctx context.Context) error {
	db, binary, err := s.schemaVersion(ctx)
	if err != nil {
		return err
	}
	switch {
	case db > binary:
		return fmt.Errorf("%w (database at version %d, binary knows up to %d)", ErrSchemaNewer, db, binary)
	case db < binary:
		return fmt.Errorf("%w (database at version %d, binary at %d)", errSchemaPending, db, binary)
	}
	return nil
}

// TestMigrationKeepsFiles writes files of two projects, with many equal
// creation times within and across the projects, into the schema before
// 00007 (files clustered on id), migrates up, down and up again, and reads
// every page of both lists after each step: the same files, in the same
// order, cut into the same pages. Then a file written again with another
// project and time moves, as ingest expects.
func TestMigrationKeepsFiles(t *testing.T) {
	const before = 6 // the last version with files clustered on id
	one, other := storetest.Files(300, "default", 81), storetest.Files(200, "other", 82)
	for i := range other { // the same instants in both projects
		other[i].CreatedAt = one[i].CreatedAt
	}
	want := map[string][]cdnapi.File{"default": slices.Clone(one), "other": slices.Clone(other)}
	for _, files := range want {
		storetest.SortFiles(files)
	}
	check := func(s *Store, when string) {
		t.Helper()
		for project, files := range want {
			if got := pagesOfFiles(t, s, project, 7); !slices.Equal(got, files) {
				t.Fatalf("%s: project %s lists %d files, want %d, or in another order", when, project, len(got), len(files))
			}
		}
	}
	s := migrationRoundTrip(t, before, func(s *Store) error {
		return storetest.Writer(s).PutFiles(t.Context(), append(one, other...))
	}, check)

	moved := want["default"][0]
	moved.Project, moved.CreatedAt = "other", moved.CreatedAt.Add(-time.Hour)
	if err := storetest.Writer(s).PutFiles(t.Context(), []cdnapi.File{moved}); err != nil {
		t.Fatalf("PutFiles: %v", err)
	}
	want["default"] = want["default"][1:]
	want["other"] = append(want["other"], moved)
	storetest.SortFiles(want["other"])
	check(s, "after moving a file to another project")
	var rows int
	if err := s.read.QueryRowContext(t.Context(), `SELECT count(*) FROM files`).Scan(&rows); err != nil || rows != len(one)+len(other) {
		t.Errorf("files holds %d rows (%v), want %d", rows, err, len(one)+len(other))
	}
}

// TestMigrationLogPositions migrates down past 00008 and up again: the
// positions go with their table, and a follower then starts from zero.
func TestMigrationLogPositions(t *testing.T) {
	const before = 7 // the last version without log_positions
	ctx := t.Context()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "m.db"), Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	p := cdnapi.LogPosition{Stream: "edge", Path: "/var/log/nginx/access.log", Device: 1 << 63, Inode: 42, Offset: 10}
	if err := storetest.Writer(s).MoveLogPosition(ctx, cdnapi.LogPosition{}, p); err != nil {
		t.Fatalf("MoveLogPosition: %v", err)
	}
	provider, err := s.provider()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := provider.DownTo(ctx, before); err != nil {
		t.Fatalf("migrating down to version %d: %v", before, err)
	}
	if _, err := s.LogPositions(ctx); err == nil {
		t.Errorf("LogPositions at version %d succeeded", before)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate again: %v", err)
	}
	if got, err := s.LogPositions(ctx); err != nil || len(got) != 0 {
		t.Errorf("LogPositions after migrating down and up = %v, %v; want none", got, err)
	}
	if err := storetest.Writer(s).MoveLogPosition(ctx, cdnapi.LogPosition{}, p); err != nil {
		t.Errorf("MoveLogPosition from zero after migrating down and up: %v", err)
	}
}

// migrationRoundTrip opens a store on a new file migrated to version, has
// fill write into it, and runs check there, after migrating up, after
// migrating down to version and after migrating up again. It returns the
// store, at the newest version.
func migrationRoundTrip(t *testing.T, version int64, fill func(*Store) error, check func(s *Store, when string)) *Store {
	t.Helper()
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "m.db"), Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	p, err := s.provider()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(t.Context(), version); err != nil {
		t.Fatalf("migrating to version %d: %v", version, err)
	}
	if err := fill(s); err != nil {
		t.Fatalf("writing into version %d: %v", version, err)
	}
	check(s, fmt.Sprintf("at version %d", version))
	if err := s.Migrate(t.Context()); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	check(s, "after migrating up")
	if _, err := p.DownTo(t.Context(), version); err != nil {
		t.Fatalf("migrating down to version %d: %v", version, err)
	}
	check(s, "after migrating down")
	if err := s.Migrate(t.Context()); err != nil {
		t.Fatalf("Migrate again: %v", err)
	}
	check(s, "after migrating up again")
	return s
}

// pagesOfFiles reads the whole list of project in pages of limit files.
func pagesOfFiles(t *testing.T, s *Store, project string, limit int) []cdnapi.File {
	t.Helper()
	var all []cdnapi.File
	var after *cdnapi.Position
	for {
		page, err := s.ListFiles(t.Context(), cdnapi.FileQuery{Project: project, After: after, Limit: limit})
		if err != nil {
			t.Fatalf("ListFiles: %v", err)
		}
		all = append(all, page...)
		if len(page) < limit {
			return all
		}
		p := page[len(page)-1].Position()
		after = &p
	}
}

// TestMigrationKeyScope writes a key into the schema before 00011, when
// keys had no scope, and migrates up: the key is read, as every key made
// before scopes. A key of scope upload then made migrates down and up
// again as read, the one scope a key without one can have.
func TestMigrationKeyScope(t *testing.T) {
	const before = 10 // the last version without api_keys.scope
	ctx := t.Context()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "m.db"), Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	p, err := s.provider()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, before); err != nil {
		t.Fatalf("migrating to version %d: %v", before, err)
	}
	old := storetest.Key("old", "alpha", 0)
	if _, err := s.write.ExecContext(ctx, `INSERT INTO api_keys (id, hash, project, label, created_at, prefix)
		VALUES (?, ?, ?, '', ?, '')`, old.ID, old.Hash[:], old.Project, old.CreatedAt.Unix()); err != nil {
		t.Fatalf("insert a key at version %d: %v", before, err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	scopes := func(when string, want ...cdnapi.KeyScope) {
		t.Helper()
		keys, err := s.APIKeys(ctx, "")
		if err != nil {
			t.Fatalf("%s: APIKeys: %v", when, err)
		}
		var got []cdnapi.KeyScope
		for _, k := range keys {
			got = append(got, k.Scope)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: scopes %q, want %q", when, got, want)
		}
	}
	scopes("after migrating up", cdnapi.ScopeRead)
	upload := storetest.Key("upload", "alpha", 1)
	upload.Scope = cdnapi.ScopeUpload
	if err := s.CreateKey(ctx, upload); err != nil {
		t.Fatalf("CreateKey: %v", err)
	}
	scopes("with an upload key", cdnapi.ScopeRead, cdnapi.ScopeUpload)
	if _, err := s.write.ExecContext(ctx, `UPDATE api_keys SET scope = 'admin'`); err == nil {
		t.Error("the table took the scope admin")
	}
	if _, err := p.DownTo(ctx, before); err != nil {
		t.Fatalf("migrating down to version %d: %v", before, err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate again: %v", err)
	}
	scopes("after migrating down and up", cdnapi.ScopeRead, cdnapi.ScopeRead)
}

// TestMigrationRebuildsEvents writes events, one delivered and one still
// waiting, into the schema before 00012 (which rebuilds events), migrates
// up, down and up again: the events keep their IDs and seqs, the waiting
// delivery its job, the foreign keys hold, and the triggers still write
// and queue events. Then a quarantine is recorded and claimed with them.
func TestMigrationRebuildsEvents(t *testing.T) {
	const before = 11 // the last version without file.quarantined
	ctx := t.Context()
	hook := storetest.Hook(0, cdnapi.EventIncidentOpened, cdnapi.EventFileQuarantined)
	var want []string // the waiting events' ids
	jobs := func(s *Store) []string {
		t.Helper()
		rows, err := s.write.QueryContext(ctx, `SELECT e.id FROM webhook_jobs j JOIN events e ON e.seq = j.event_seq ORDER BY e.seq`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var ids []string
		for rows.Next() {
			var id string
			rows.Scan(&id)
			ids = append(ids, id)
		}
		return ids
	}
	check := func(s *Store, when string) {
		t.Helper()
		if got := jobs(s); !slices.Equal(got, want) {
			t.Errorf("%s: waiting events %v, want %v", when, got, want)
		}
		var broken, triggers int
		s.write.QueryRowContext(ctx, `SELECT count(*) FROM pragma_foreign_key_check`).Scan(&broken)
		s.write.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE type = 'trigger'
			AND name IN ('events_queued', 'incidents_opened', 'incidents_resolved', 'incidents_updated', 'region_changed')`).Scan(&triggers)
		if broken != 0 || triggers != 5 {
			t.Errorf("%s: %d foreign keys broken, %d of the 5 event triggers", when, broken, triggers)
		}
	}
	s := migrationRoundTrip(t, before, func(s *Store) error {
		if err := s.AddWebhook(ctx, hook); err != nil {
			return err
		}
		// Inserted as UpdateIncident did at this version, before 00014's
		// updated_at; the trigger writes the events.
		for _, c := range []string{"API", "Storage"} {
			if _, err := s.write.ExecContext(ctx, `INSERT INTO incidents (id, component, status, severity, started_at)
				VALUES (?, ?, ?, ?, ?)`, cdnapi.NewIncidentID(), c, cdnapi.StatusMajorOutage,
				cdnapi.StatusMajorOutage.Severity(), storetest.Epoch.Unix()); err != nil {
				return err
			}
		}
		// The first is delivered: its job goes, its event stays.
		ids := jobs(s)
		if _, err := s.write.ExecContext(ctx, `DELETE FROM webhook_jobs WHERE event_seq = (SELECT seq FROM events WHERE id = ?)`, ids[0]); err != nil {
			return err
		}
		want = ids[1:]
		return nil
	}, check)

	if err := s.UpdateIncident(ctx, cdnapi.IncidentUpdate{Component: "CDN", Status: cdnapi.StatusMajorOutage, At: storetest.Epoch}); err != nil {
		t.Fatal(err)
	}
	q := storetest.Quarantine("acme", "a.exe")
	if err := s.RecordQuarantine(ctx, cdnapi.QuarantineEventID(q.Project, q.Path, q.Checksum), q); err != nil {
		t.Fatal(err)
	}
	ds, err := s.ClaimDeliveries(ctx, hook.ID, 10, time.Hour)
	if err != nil || len(ds) != 3 {
		t.Fatalf("ClaimDeliveries = %+v, %v; want the waiting incident, the new one and the quarantine", ds, err)
	}
	if ds[0].Event.ID != want[0] || ds[0].Event.Incident == nil || ds[1].Event.Incident == nil ||
		ds[2].Event.Type != cdnapi.EventFileQuarantined || ds[2].Event.Quarantine == nil {
		t.Errorf("claimed %+v %+v %+v", ds[0].Event, ds[1].Event, ds[2].Event)
	}
}
