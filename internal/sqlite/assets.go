package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/cdnapi/cdnapi"
)

// The asset list queries: range scans of the assets table, which is
// clustered on (created_at, id), or of assets_by_region_created when a
// region is given, read backwards (both ascend; see migrations 00002 and
// 00003), that stop after LIMIT rows.
const (
	listAssetsFirst = `SELECT id, created_at, path, bytes, cache_status, region FROM assets
		ORDER BY created_at DESC, id DESC LIMIT ?`
	listAssetsAfter = `SELECT id, created_at, path, bytes, cache_status, region FROM assets
		WHERE (created_at, id) < (?, ?)
		ORDER BY created_at DESC, id DESC LIMIT ?`
	listRegionAssetsFirst = `SELECT id, created_at, path, bytes, cache_status, region FROM assets
		WHERE region = ?
		ORDER BY created_at DESC, id DESC LIMIT ?`
	listRegionAssetsAfter = `SELECT id, created_at, path, bytes, cache_status, region FROM assets
		WHERE region = ? AND (created_at, id) < (?, ?)
		ORDER BY created_at DESC, id DESC LIMIT ?`
)

// ListAssets returns up to q.Limit assets, newest first, of q.Region or, when
// it is "", of every region, after q.After when it is set. ctx bounds the
// wait for a read connection, as in ListFiles.
func (s *Store) ListAssets(ctx context.Context, q cdnapi.AssetQuery) ([]cdnapi.Asset, error) {
	if q.Limit < 1 {
		return nil, fmt.Errorf("sqlite: list assets: limit %d is below 1", q.Limit)
	}
	var rows *readRows
	var err error
	switch {
	case q.Region == "" && q.After == nil:
		rows, err = s.queryPage(ctx, q.Limit, listAssetsFirst, q.Limit)
	case q.Region == "":
		rows, err = s.queryPage(ctx, q.Limit, listAssetsAfter, q.After.CreatedAt.Unix(), q.After.ID, q.Limit)
	case q.After == nil:
		rows, err = s.queryPage(ctx, q.Limit, listRegionAssetsFirst, q.Region, q.Limit)
	default:
		rows, err = s.queryPage(ctx, q.Limit, listRegionAssetsAfter, q.Region, q.After.CreatedAt.Unix(), q.After.ID, q.Limit)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: list assets: %w", err)
	}
	defer rows.Close()
	assets := make([]cdnapi.Asset, 0, min(q.Limit, listPrealloc))
	// As in ListFiles, every row is scanned into the same variables. The
	// cache status goes through a string: Scan into a named string type
	// takes reflection.
	var a cdnapi.Asset
	var created int64
	var status string
	dest := []any{&a.ID, &created, &a.Path, &a.Bytes, &status, &a.Region}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("sqlite: list assets: %w", err)
		}
		a.CreatedAt, a.CacheStatus = unixTime(created), cdnapi.CacheStatus(status)
		assets = append(assets, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list assets: %w", err)
	}
	return assets, nil
}

// deleteAssetsBefore deletes the oldest assets created before a cutoff, up
// to a limit: the subquery walks the table from its old end and hands over
// primary keys, so a batch costs its own rows, never a scan of what stays.
const deleteAssetsBefore = `DELETE FROM assets WHERE (created_at, id) IN (
		SELECT created_at, id FROM assets WHERE created_at < ?
		ORDER BY created_at, id LIMIT ?)`

// DeleteAssetsBefore deletes up to limit assets created before cutoff,
// oldest first, in one transaction, and returns how many it deleted. An
// asset created at cutoff stays. limit must be at least 1.
func (s *Store) DeleteAssetsBefore(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	if limit < 1 {
		// SQLite reads LIMIT -1 as "no limit": one huge delete would hold
		// the write lock for as long as it takes.
		return 0, fmt.Errorf("sqlite: delete assets: limit %d is below 1", limit)
	}
	var n int64
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, deleteAssetsBefore, secondsBefore(cutoff), limit)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("sqlite: delete assets before %s: %w", cutoff.UTC().Format(time.RFC3339Nano), err)
	}
	return int(n), nil
}

// secondsBefore returns the unix second s such that a stored time (whole
// seconds) is before t exactly when it is before s: t itself when t is a
// whole second, else the next whole second.
func secondsBefore(t time.Time) int64 {
	s := t.Unix()
	if t.Nanosecond() > 0 {
		s++
	}
	return s
}

// countAssetsSince counts, newest first, up to the limit, the assets created
// at or after a time: a backward walk of the table's clustered key that
// stops at the limit.
const countAssetsSince = `SELECT count(*), min(created_at) FROM (
	SELECT created_at FROM assets WHERE created_at >= ?
	ORDER BY created_at DESC, id DESC LIMIT ?)`

// CountAssetsSince counts the assets created at or after since, up to
// limit, and returns the count and the oldest created_at counted.
func (s *Store) CountAssetsSince(ctx context.Context, since time.Time, limit int) (int, time.Time, error) {
	var n int
	var oldest sql.NullInt64
	s2 := since.Unix()
	if since.Nanosecond() > 0 {
		s2++ // a stored second at or after since
	}
	if err := s.queryRow(ctx, countAssetsSince, []any{s2, limit}, &n, &oldest); err != nil {
		return 0, time.Time{}, fmt.Errorf("sqlite: count assets: %w", err)
	}
	if !oldest.Valid {
		return 0, time.Time{}, nil
	}
	return n, time.Unix(oldest.Int64, 0).UTC(), nil
}
