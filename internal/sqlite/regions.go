package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/cdnapi/cdnapi"
)

// listRegions walks the primary key, in code order.
const listRegions = `SELECT code, name, zone, country, status, status_set, status_until FROM regions ORDER BY code`

// regionRow receives the columns of a region and applies the end of its
// status (see cdnapi.Region.WithStatusUntil).
type regionRow struct {
	r     cdnapi.Region
	set   sql.NullString
	until sql.NullInt64
}

func (rr *regionRow) dest() []any {
	return []any{&rr.r.Code, &rr.r.Name, &rr.r.Zone, &rr.r.Country, &rr.r.Status, &rr.set, &rr.until}
}

func (rr *regionRow) region(now time.Time) cdnapi.Region {
	if !rr.until.Valid {
		return rr.r
	}
	return rr.r.WithStatusUntil(cdnapi.Status(rr.set.String), time.Unix(rr.until.Int64, 0), now)
}

// ListRegions returns every region, ordered by code. There are tens of
// regions, never enough to need paging.
func (s *Store) ListRegions(ctx context.Context) ([]cdnapi.Region, error) {
	rows, err := s.query(ctx, listRegions)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list regions: %w", err)
	}
	defer rows.Close()
	now := time.Now()
	var regions []cdnapi.Region
	for rows.Next() {
		var rr regionRow
		if err := rows.Scan(rr.dest()...); err != nil {
			return nil, fmt.Errorf("sqlite: list regions: %w", err)
		}
		regions = append(regions, rr.region(now))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list regions: %w", err)
	}
	return regions, nil
}

// Region returns the region with the given code, or cdnapi.ErrNotFound.
func (s *Store) Region(ctx context.Context, code string) (cdnapi.Region, error) {
	var rr regionRow
	err := s.queryRow(ctx, `SELECT code, name, zone, country, status, status_set, status_until FROM regions WHERE code = ?`,
		[]any{code}, rr.dest()...)
	if errors.Is(err, sql.ErrNoRows) {
		return cdnapi.Region{}, cdnapi.ErrNotFound
	}
	if err != nil {
		return cdnapi.Region{}, fmt.Errorf("sqlite: region: %w", err)
	}
	return rr.region(time.Now()), nil
}

// SetRegionStatus sets the status of the region with code, until until
// when that is not zero. It returns cdnapi.ErrNotFound when there is no
// such region. The caller checks status; the schema refuses one that is not
// valid all the same.
func (s *Store) SetRegionStatus(ctx context.Context, code string, status cdnapi.Status, until time.Time) error {
	var end, set any // NULL: no end
	if !until.IsZero() {
		end, set = until.Unix(), string(status)
	}
	var n int64
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE regions SET status = ?, status_set = ?, status_until = ? WHERE code = ?`,
			string(status), set, end, code)
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
