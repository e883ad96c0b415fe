package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/cdnapi/cdnapi"
)

// The asset list queries: range scans of assets_by_created, or of
// assets_by_region_created when a region is given, that stop after LIMIT
// rows.
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

var assetUpsert = upsert{
	table:    "assets",
	columns:  []string{"id", "created_at", "path", "bytes", "cache_status", "region"},
	conflict: "id",
}

// ListAssets returns up to q.Limit assets, newest first, of q.Region or, when
// it is "", of every region, after q.After when it is set.
func (s *Store) ListAssets(ctx context.Context, q cdnapi.AssetQuery) ([]cdnapi.Asset, error) {
	if q.Limit < 1 {
		return nil, fmt.Errorf("sqlite: list assets: limit %d is below 1", q.Limit)
	}
	var rows *sql.Rows
	var err error
	switch {
	case q.Region == "" && q.After == nil:
		rows, err = s.query(ctx, listAssetsFirst, q.Limit)
	case q.Region == "":
		rows, err = s.query(ctx, listAssetsAfter, q.After.CreatedAt.Unix(), q.After.ID, q.Limit)
	case q.After == nil:
		rows, err = s.query(ctx, listRegionAssetsFirst, q.Region, q.Limit)
	default:
		rows, err = s.query(ctx, listRegionAssetsAfter, q.Region, q.After.CreatedAt.Unix(), q.After.ID, q.Limit)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: list assets: %w", err)
	}
	defer rows.Close()
	assets := make([]cdnapi.Asset, 0, min(q.Limit, cdnapi.MaxLimit+1))
	for rows.Next() {
		var a cdnapi.Asset
		var created int64
		if err := rows.Scan(&a.ID, &created, &a.Path, &a.Bytes, &a.CacheStatus, &a.Region); err != nil {
			return nil, fmt.Errorf("sqlite: list assets: %w", err)
		}
		a.CreatedAt = unixTime(created)
		assets = append(assets, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list assets: %w", err)
	}
	return assets, nil
}

// PutAssets upserts assets by ID in one transaction: all or none. Writing
// no assets does nothing.
func (s *Store) PutAssets(ctx context.Context, assets []cdnapi.Asset) error {
	if len(assets) == 0 {
		return nil
	}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		return assetUpsert.exec(ctx, tx, len(assets), func(args []any, i int) []any {
			a := &assets[i]
			return append(args, a.ID, a.CreatedAt.Unix(), a.Path, a.Bytes, string(a.CacheStatus), a.Region)
		})
	})
	if err != nil {
		return fmt.Errorf("sqlite: put %d assets: %w", len(assets), err)
	}
	return nil
}
