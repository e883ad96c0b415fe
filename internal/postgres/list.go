package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// listPrealloc caps the rows a list makes room for before it reads any: a
// caller's limit may be large, and a page of the API fits well within it.
const listPrealloc = 128

// The list queries. Each is a range scan, in index order, of the index named
// beside it, stopped by LIMIT: a page deep in the list costs what the first
// does. PostgreSQL turns the row-value comparison (created_at, id) < ($n, $m)
// into the scan's start key; the equivalent OR of two comparisons would be a
// filter instead. TestQueryPlans holds them to these plans.
const (
	// files_by_project_created
	listFilesFirst = `SELECT id, created_at, filename, bytes, checksum FROM files
		WHERE project = $1
		ORDER BY created_at DESC, id DESC LIMIT $2`
	listFilesAfter = `SELECT id, created_at, filename, bytes, checksum FROM files
		WHERE project = $1 AND (created_at, id) < ($2, $3)
		ORDER BY created_at DESC, id DESC LIMIT $4`

	// assets_by_created
	listAssetsFirst = `SELECT id, created_at, path, bytes, cache_status, region FROM assets
		ORDER BY created_at DESC, id DESC LIMIT $1`
	listAssetsAfter = `SELECT id, created_at, path, bytes, cache_status, region FROM assets
		WHERE (created_at, id) < ($1, $2)
		ORDER BY created_at DESC, id DESC LIMIT $3`

	// assets_by_region_created. The region is bounded by a range of one
	// value, not "region = $1", and leads the ORDER BY, on purpose: with an
	// equality the planner may prefer to walk assets_by_created and filter
	// by region, which it prices the same when regions are even but which
	// reads the whole table for a region that has no recent assets. An
	// order that begins with region is one only this index delivers
	// without a sort, and the range's inclusive start still lets the
	// row-value bound position the scan.
	listRegionAssetsFirst = `SELECT id, created_at, path, bytes, cache_status, region FROM assets
		WHERE region >= $1 AND region <= $1
		ORDER BY region, created_at DESC, id DESC LIMIT $2`
	listRegionAssetsAfter = `SELECT id, created_at, path, bytes, cache_status, region FROM assets
		WHERE region >= $1 AND region <= $1 AND (created_at, id) < ($2, $3)
		ORDER BY region, created_at DESC, id DESC LIMIT $4`

	// regions_pkey; there are tens of regions, never enough to page.
	listRegions = `SELECT code, name, zone, country, status, status_set, status_until FROM regions ORDER BY code`
	getRegion   = `SELECT code, name, zone, country, status, status_set, status_until FROM regions WHERE code = $1`
)

// ListFiles returns up to q.Limit files of q.Project, newest first, after
// q.After when it is set. It reads from the read replica, if there is one and it answers.
func (s *Store) ListFiles(ctx context.Context, q cdnapi.FileQuery) ([]cdnapi.File, error) {
	if q.Limit < 1 {
		return nil, fmt.Errorf("postgres: list files: limit %d is below 1", q.Limit)
	}
	var files []cdnapi.File
	err := s.reading(ctx, func(db *pgxpool.Pool) error {
		var rows pgx.Rows
		var err error
		if q.After == nil {
			rows, err = db.Query(ctx, listFilesFirst, q.Project, q.Limit)
		} else {
			rows, err = db.Query(ctx, listFilesAfter, q.Project, wholeSecondUTC(q.After.CreatedAt), q.After.ID, q.Limit)
		}
		if err != nil {
			return err
		}
		defer rows.Close()
		files = make([]cdnapi.File, 0, min(q.Limit, listPrealloc))
		for rows.Next() {
			f := cdnapi.File{Project: q.Project}
			if err := rows.Scan(&f.ID, &f.CreatedAt, &f.Filename, &f.Bytes, &f.Checksum); err != nil {
				return err
			}
			f.CreatedAt = f.CreatedAt.UTC()
			files = append(files, f)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: list files: %w", err)
	}
	return files, nil
}

// ListAssets returns up to q.Limit assets, newest first, of q.Region or, when
// it is "", of every region, after q.After when it is set. It reads from the
// read replica, if there is one.
func (s *Store) ListAssets(ctx context.Context, q cdnapi.AssetQuery) ([]cdnapi.Asset, error) {
	if q.Limit < 1 {
		return nil, fmt.Errorf("postgres: list assets: limit %d is below 1", q.Limit)
	}
	var assets []cdnapi.Asset
	err := s.reading(ctx, func(db *pgxpool.Pool) error {
		var rows pgx.Rows
		var err error
		switch {
		case q.Region == "" && q.After == nil:
			rows, err = db.Query(ctx, listAssetsFirst, q.Limit)
		case q.Region == "":
			rows, err = db.Query(ctx, listAssetsAfter, wholeSecondUTC(q.After.CreatedAt), q.After.ID, q.Limit)
		case q.After == nil:
			rows, err = db.Query(ctx, listRegionAssetsFirst, q.Region, q.Limit)
		default:
			rows, err = db.Query(ctx, listRegionAssetsAfter, q.Region, wholeSecondUTC(q.After.CreatedAt), q.After.ID, q.Limit)
		}
		if err != nil {
			return err
		}
		defer rows.Close()
		assets = make([]cdnapi.Asset, 0, min(q.Limit, listPrealloc))
		for rows.Next() {
			var a cdnapi.Asset
			if err := rows.Scan(&a.ID, &a.CreatedAt, &a.Path, &a.Bytes, &a.CacheStatus, &a.Region); err != nil {
				return err
			}
			a.CreatedAt = a.CreatedAt.UTC()
			assets = append(assets, a)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: list assets: %w", err)
	}
	return assets, nil
}

// regionRow receives the columns of a region and applies the end of its
// status (see cdnapi.Region.WithStatusUntil).
type regionRow struct {
	r     cdnapi.Region
	set   *string
	until *time.Time
}

func (rr *regionRow) dest() []any {
	return []any{&rr.r.Code, &rr.r.Name, &rr.r.Zone, &rr.r.Country, &rr.r.Status, &rr.set, &rr.until}
}

func (rr *regionRow) region(now time.Time) cdnapi.Region {
	if rr.until == nil || rr.set == nil {
		return rr.r
	}
	return rr.r.WithStatusUntil(cdnapi.Status(*rr.set), *rr.until, now)
}

// ListRegions returns every region, ordered by code. It reads from the read
// replica, if there is one.
func (s *Store) ListRegions(ctx context.Context) ([]cdnapi.Region, error) {
	now := time.Now()
	var regions []cdnapi.Region
	err := s.reading(ctx, func(db *pgxpool.Pool) error {
		rows, err := db.Query(ctx, listRegions)
		if err != nil {
			return err
		}
		defer rows.Close()
		regions = regions[:0]
		for rows.Next() {
			var rr regionRow
			if err := rows.Scan(rr.dest()...); err != nil {
				return err
			}
			regions = append(regions, rr.region(now))
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: list regions: %w", err)
	}
	return regions, nil
}

// Region returns the region with the given code, or cdnapi.ErrNotFound. It
// reads from the read replica, if there is one, so that it agrees with the
// lists it guards.
func (s *Store) Region(ctx context.Context, code string) (cdnapi.Region, error) {
	var rr regionRow
	err := s.reading(ctx, func(db *pgxpool.Pool) error {
		return db.QueryRow(ctx, getRegion, code).Scan(rr.dest()...)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return cdnapi.Region{}, cdnapi.ErrNotFound
	}
	if err != nil {
		return cdnapi.Region{}, fmt.Errorf("postgres: region: %w", err)
	}
	return rr.region(time.Now()), nil
}
