package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/cdnapi/cdnapi"
)

// The log followers' positions (see cdnapi.LogPosition). device and inode
// are stored as the int64 of their bits, since database/sql refuses a
// uint64 at or above 2^63 (see migration 00008); times as unix
// microseconds, the precision PostgreSQL keeps too.

const (
	// insertLogPosition inserts the first position of a stream, and does
	// nothing when the stream has one: the move then fails. The writer
	// holds SQLite's write lock from BEGIN IMMEDIATE on, so no other
	// writer can insert the row between this statement and the commit.
	insertLogPosition = `INSERT INTO log_positions
		(stream, path, device, inode, "offset", head, head_bytes, lines, newest_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (stream) DO NOTHING`
	// moveLogPosition replaces a stream's position provided it is still the
	// one the caller read: the compare of the compare-and-set is its WHERE.
	moveLogPosition = `UPDATE log_positions SET
		path = ?, device = ?, inode = ?, "offset" = ?, head = ?, head_bytes = ?, lines = ?,
		newest_at = ?, updated_at = ?
		WHERE stream = ? AND device = ? AND inode = ? AND "offset" = ?`
	selectLogPositions = `SELECT stream, path, device, inode, "offset", head, head_bytes, lines,
		newest_at, updated_at FROM log_positions`
)

// MoveLogPosition inserts to when from is the zero LogPosition, and
// otherwise replaces the stored position of to.Stream if it has from's
// device, inode and offset. When no row matches, it returns
// cdnapi.ErrPositionMoved, having written nothing. UpdatedAt is the
// process's clock, to the microsecond.
func (b *batcher) MoveLogPosition(ctx context.Context, from, to cdnapi.LogPosition) error {
	now := time.Now().UnixMicro()
	var res sql.Result
	var err error
	if from == (cdnapi.LogPosition{}) {
		res, err = b.tx.ExecContext(ctx, insertLogPosition, to.Stream, to.Path, int64(to.Device), int64(to.Inode),
			to.Offset, to.Head, to.HeadBytes, to.Lines, nullMicros(to.NewestAt), now)
	} else {
		res, err = b.tx.ExecContext(ctx, moveLogPosition, to.Path, int64(to.Device), int64(to.Inode),
			to.Offset, to.Head, to.HeadBytes, to.Lines, nullMicros(to.NewestAt), now,
			to.Stream, int64(from.Device), int64(from.Inode), from.Offset)
	}
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return cdnapi.ErrPositionMoved
	}
	return nil
}

// LogPosition returns the committed position of stream, or
// cdnapi.ErrNotFound.
func (s *Store) LogPosition(ctx context.Context, stream string) (cdnapi.LogPosition, error) {
	var r logPositionRow
	err := s.queryRow(ctx, selectLogPositions+` WHERE stream = ?`, []any{stream}, r.dest()...)
	if errors.Is(err, sql.ErrNoRows) {
		return cdnapi.LogPosition{}, cdnapi.ErrNotFound
	}
	if err != nil {
		return cdnapi.LogPosition{}, fmt.Errorf("sqlite: log position of %s: %w", stream, err)
	}
	return r.position(), nil
}

// LogPositions returns every stream's position, ordered by stream (byte
// order). There is one per followed log, never enough to need paging.
func (s *Store) LogPositions(ctx context.Context) ([]cdnapi.LogPosition, error) {
	rows, err := s.query(ctx, selectLogPositions+` ORDER BY stream`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: log positions: %w", err)
	}
	defer rows.Close()
	var positions []cdnapi.LogPosition
	for rows.Next() {
		var r logPositionRow
		if err := rows.Scan(r.dest()...); err != nil {
			return nil, fmt.Errorf("sqlite: log positions: %w", err)
		}
		positions = append(positions, r.position())
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: log positions: %w", err)
	}
	return positions, nil
}

// DeleteLogPosition deletes the position of stream, or returns
// cdnapi.ErrNotFound when there is none.
func (s *Store) DeleteLogPosition(ctx context.Context, stream string) error {
	res, err := s.exec(ctx, `DELETE FROM log_positions WHERE stream = ?`, stream)
	if err != nil {
		return fmt.Errorf("sqlite: delete log position of %s: %w", stream, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("sqlite: delete log position of %s: %w", stream, err)
	} else if n == 0 {
		return cdnapi.ErrNotFound
	}
	return nil
}

// logPositionRow receives the columns of selectLogPositions.
type logPositionRow struct {
	p             cdnapi.LogPosition
	device, inode int64
	newest        sql.NullInt64
	updated       int64
}

func (r *logPositionRow) dest() []any {
	return []any{&r.p.Stream, &r.p.Path, &r.device, &r.inode, &r.p.Offset, &r.p.Head, &r.p.HeadBytes,
		&r.p.Lines, &r.newest, &r.updated}
}

func (r *logPositionRow) position() cdnapi.LogPosition {
	p := r.p
	p.Device, p.Inode = uint64(r.device), uint64(r.inode)
	if r.newest.Valid {
		p.NewestAt = time.UnixMicro(r.newest.Int64).UTC()
	}
	p.UpdatedAt = time.UnixMicro(r.updated).UTC()
	return p
}

// nullMicros is t in unix microseconds, or NULL for the zero time.
func nullMicros(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixMicro(), Valid: true}
}
