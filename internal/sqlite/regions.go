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

var regionUpsert = upsert{
	table:    "regions",
	columns:  []string{"code", "name", "zone", "country", "status"},
	conflict: "code",
}

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

// PutRegions upserts regions by code in one transaction: all or none.
// Writing no regions does nothing.
func (s *Store) PutRegions(ctx context.Context, regions []cdnapi.Region) error {
	if len(regions) == 0 {
		return nil
	}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		return regionUpsert.exec(ctx, tx, len(regions), func(args []any, i int) []any {
			r := &regions[i]
			return append(args, r.Code, r.Name, r.Zone, r.Country, string(r.Status))
		})
	})
	if err != nil {
		return fmt.Errorf("sqlite: put %d regions: %w", len(regions), err)
	}
	return nil
}
