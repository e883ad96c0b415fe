package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/cdnapi/cdnapi"
)

// listRegions walks the primary key, in code order.
const listRegions = `SELECT code, name, zone, country, status FROM regions ORDER BY code`

// ListRegions returns every region, ordered by code. There are tens of
// regions, never enough to need paging.
func (s *Store) ListRegions(ctx context.Context) ([]cdnapi.Region, error) {
	rows, err := s.query(ctx, listRegions)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list regions: %w", err)
	}
	defer rows.Close()
	var regions []cdnapi.Region
	for rows.Next() {
		var r cdnapi.Region
		if err := rows.Scan(&r.Code, &r.Name, &r.Zone, &r.Country, &r.Status); err != nil {
			return nil, fmt.Errorf("sqlite: list regions: %w", err)
		}
		regions = append(regions, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list regions: %w", err)
	}
	return regions, nil
}

// Region returns the region with the given code, or cdnapi.ErrNotFound.
func (s *Store) Region(ctx context.Context, code string) (cdnapi.Region, error) {
	var r cdnapi.Region
	err := s.queryRow(ctx, `SELECT code, name, zone, country, status FROM regions WHERE code = ?`, []any{code},
		&r.Code, &r.Name, &r.Zone, &r.Country, &r.Status)
	if errors.Is(err, sql.ErrNoRows) {
		return cdnapi.Region{}, cdnapi.ErrNotFound
	}
	if err != nil {
		return cdnapi.Region{}, fmt.Errorf("sqlite: region: %w", err)
	}
	return r, nil
}

// SetRegionStatus sets the status of the region with code. It returns
// cdnapi.ErrNotFound when there is no such region. The caller checks
// status; the schema refuses one that is not valid all the same.
func (s *Store) SetRegionStatus(ctx context.Context, code string, status cdnapi.Status) error {
	var n int64
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE regions SET status = ? WHERE code = ?`, string(status), code)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: set region status: %w", err)
	}
	if n == 0 {
		return cdnapi.ErrNotFound
	}
	return nil
}
