package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The log followers' positions (see cdnapi.LogPosition). device and inode
// are stored as the bigint of their bits, since PostgreSQL has no unsigned
// type (see migration 00005); times keep microseconds.
//
// Every statement goes to the primary: a follower that read its position
// from a lagging replica would move from a stale one, and fail.

const (
	// insertLogPosition inserts the first position of a stream, and does
	// nothing when the stream has one: the move then fails. Two followers
	// that insert the same stream at once both reach the unique index; the
	// second waits for the first's transaction, and does nothing if it
	// commits.
	insertLogPosition = `INSERT INTO log_positions
		(stream, path, device, inode, "offset", head, head_bytes, lines, newest_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, statement_timestamp())
		ON CONFLICT (stream) DO NOTHING`
	// moveLogPosition replaces a stream's position provided it is still the
	// one the caller read: the compare of the compare-and-set is its WHERE.
	// Under READ COMMITTED a second UPDATE of the row waits for the first's
	// transaction and, once it commits, evaluates the WHERE again on the
	// row the first wrote, so two moves from one position never both win.
	moveLogPosition = `UPDATE log_positions SET
		path = $2, device = $3, inode = $4, "offset" = $5, head = $6, head_bytes = $7, lines = $8,
		newest_at = $9, updated_at = statement_timestamp()
		WHERE stream = $1 AND device = $10 AND inode = $11 AND "offset" = $12`
	selectLogPositions = `SELECT stream, path, device, inode, "offset", head, head_bytes, lines,
		newest_at, updated_at FROM log_positions`
)

// MoveLogPosition inserts to when from is the zero LogPosition, and
// otherwise replaces the stored position of to.Stream if it has from's
// device, inode and offset. When no row matches, it returns
// cdnapi.ErrPositionMoved, having written nothing. UpdatedAt is the
// server's clock, which every follower sharing the database shares too.
func (b *batcher) MoveLogPosition(ctx context.Context, from, to cdnapi.LogPosition) error {
	var newest *time.Time // NULL: no request committed yet
	if !to.NewestAt.IsZero() {
		newest = &to.NewestAt
	}
	args := []any{to.Stream, to.Path, int64(to.Device), int64(to.Inode), to.Offset, to.Head, to.HeadBytes, to.Lines, newest}
	var tag pgconn.CommandTag
	var err error
	if from == (cdnapi.LogPosition{}) {
		tag, err = b.tx.Exec(ctx, insertLogPosition, args...)
	} else {
		tag, err = b.tx.Exec(ctx, moveLogPosition, append(args, int64(from.Device), int64(from.Inode), from.Offset)...)
	}
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return cdnapi.ErrPositionMoved
	}
	return nil
}

// LogPosition returns the committed position of stream, or
// cdnapi.ErrNotFound.
func (s *Store) LogPosition(ctx context.Context, stream string) (cdnapi.LogPosition, error) {
	rows, err := s.primary.Query(ctx, selectLogPositions+` WHERE stream = $1`, stream)
	if err != nil {
		return cdnapi.LogPosition{}, fmt.Errorf("postgres: log position of %s: %w", stream, err)
	}
	p, err := pgx.CollectExactlyOneRow(rows, scanLogPosition)
	if errors.Is(err, pgx.ErrNoRows) {
		return cdnapi.LogPosition{}, cdnapi.ErrNotFound
	}
	if err != nil {
		return cdnapi.LogPosition{}, fmt.Errorf("postgres: log position of %s: %w", stream, err)
	}
	return p, nil
}

// LogPositions returns every stream's position, ordered by stream (byte
// order, the column's collation). There is one per followed log, never
// enough to need paging.
func (s *Store) LogPositions(ctx context.Context) ([]cdnapi.LogPosition, error) {
	rows, err := s.primary.Query(ctx, selectLogPositions+` ORDER BY stream`)
	if err != nil {
		return nil, fmt.Errorf("postgres: log positions: %w", err)
	}
	positions, err := pgx.CollectRows(rows, scanLogPosition)
	if err != nil {
		return nil, fmt.Errorf("postgres: log positions: %w", err)
	}
	return positions, nil
}

// DeleteLogPosition deletes the position of stream, or returns
// cdnapi.ErrNotFound when there is none.
func (s *Store) DeleteLogPosition(ctx context.Context, stream string) error {
	tag, err := s.primary.Exec(ctx, `DELETE FROM log_positions WHERE stream = $1`, stream)
	if err != nil {
		return fmt.Errorf("postgres: delete log position of %s: %w", stream, err)
	}
	if tag.RowsAffected() == 0 {
		return cdnapi.ErrNotFound
	}
	return nil
}

// scanLogPosition scans a row of selectLogPositions.
func scanLogPosition(row pgx.CollectableRow) (cdnapi.LogPosition, error) {
	var p cdnapi.LogPosition
	var device, inode int64
	var newest *time.Time
	err := row.Scan(&p.Stream, &p.Path, &device, &inode, &p.Offset, &p.Head, &p.HeadBytes, &p.Lines,
		&newest, &p.UpdatedAt)
	p.Device, p.Inode = uint64(device), uint64(inode)
	p.NewestAt, p.UpdatedAt = timeOf(newest), p.UpdatedAt.UTC()
	return p, err
}
