package sqlite

import (
	"context"
	"database/sql"
	"fmt"
)

// The probe reads the newest row of each list the way the list does, down
// the same b-trees, so it costs a few page reads whatever the size of the
// tables (see TestQueryPlans). The files table is the list's b-tree (see
// migration 00007); the probe reads the newest file of the last project.
const (
	probeFiles = `SELECT id, created_at, filename, bytes, checksum FROM files
		ORDER BY project DESC, created_at DESC, id DESC LIMIT 1`
	probeAssets  = `SELECT id, created_at, path, bytes, cache_status, region FROM assets ORDER BY created_at DESC, id DESC LIMIT 1`
	probeRegions = `SELECT code, name, zone, country, status FROM regions ORDER BY code LIMIT 1`
)

// openProbe opens the pool of Ping: one read-only connection at a time,
// never kept idle, so that each Ping opens the file afresh.
func openProbe(path string, opts Options) (*sql.DB, error) {
	probe, err := sql.Open("sqlite", path+"?"+readerParams(opts).Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s for probing: %w", path, err)
	}
	probe.SetMaxOpenConns(1)
	probe.SetMaxIdleConns(0)
	return probe, nil
}

// Ping checks that the database file can be read within ctx: it reads the
// newest file, asset and region through the lists' b-trees, on a connection
// opened for this Ping. A pooled reader would not do: in WAL mode SQLite
// keeps a connection's page cache for as long as no writer commits, so a
// warm reader answers from memory pages that the file on disk no longer
// holds, and a probe through it calls a damaged file sound.
func (s *Store) Ping(ctx context.Context) error {
	conn, err := s.probe.Conn(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: ping: %w", err)
	}
	defer conn.Close()
	for _, q := range []string{probeFiles, probeAssets, probeRegions} {
		rows, err := conn.QueryContext(ctx, q)
		if err != nil {
			return fmt.Errorf("sqlite: ping: %w", err)
		}
		for rows.Next() { // the step reads the row's pages; its values are not needed
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return fmt.Errorf("sqlite: ping: %w", err)
		}
	}
	return nil
}
