package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The assets are partitioned by the UTC day of created_at (migration
// 00011): assets_pYYYYMMDD for each day, assets_legacy for the rows the
// table held before it was partitioned, and assets_default for a row whose
// day has no partition.
//
// A day, not an hour, because every query that the range of created_at
// does not bound visits every partition: a list's first page is a Merge
// Append that starts one index scan per partition (an ordered Append,
// which would read one, is not possible beside a default partition), and
// a write probes each partition's primary key for the ID at another time.
// The default week is 9 or 10 day partitions; in hours it would be 170,
// each visited by every first page and every write. Hours would only make
// the partition that straddles the cutoff smaller, and that partition is
// deleted row by row either way: the DELETE that keeps retention to the
// second removes each row once, whatever the partition's size.

// partitionLockTimeout bounds the wait for the table's locks when making
// or dropping a partition. DROP TABLE of a partition takes the ACCESS
// EXCLUSIVE lock of the partitioned table, and a lock request that waits
// queues every read and write behind it: better to give up, and try at the
// next run, than to stall the lists behind a long query.
const partitionLockTimeout = 2 * time.Second

// lockNotAvailable is PostgreSQL's SQLSTATE when lock_timeout expires.
const lockNotAvailable = "55P03"

// MakeAssetPartitions makes the partitions of the UTC days from the day of
// from to the day of to, both included, that do not exist yet, moving into
// each the rows the default partition holds for its day. It returns how
// many it made. A day that assets_legacy covers gets none.
func (s *Store) MakeAssetPartitions(ctx context.Context, from, to time.Time) (int, error) {
	first, last := utcDay(from), utcDay(to)
	made := 0
	for day := first; !day.After(last); day = day.AddDate(0, 0, 1) {
		ok, err := s.makePartition(ctx, day)
		if err != nil {
			return made, fmt.Errorf("postgres: make the assets partition of %s: %w", day.Format(time.DateOnly), err)
		}
		if ok {
			made++
		}
	}
	return made, nil
}

// makePartition makes the partition of day, in a transaction of its own
// bounded by partitionLockTimeout.
func (s *Store) makePartition(ctx context.Context, day time.Time) (bool, error) {
	var made bool
	err := pgx.BeginFunc(ctx, s.primary, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, setLockTimeout); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT assets_add_partition($1::date)`, day.Format(time.DateOnly)).Scan(&made)
	})
	return made, err
}

var setLockTimeout = fmt.Sprintf(`SET LOCAL lock_timeout = %d`, partitionLockTimeout.Milliseconds())

// assetPartitions lists the partitions of assets whose range ends (is
// before, not at) a given time, the oldest first, with the planner's
// estimate of their rows: DROP TABLE counts nothing, and a count(*) would
// read the partition that the DROP spares reading. The estimate is -1 for
// a partition never analyzed, which autovacuum does once a partition has
// taken some rows: such a one is small, and counted. The default partition
// has no end and is never listed.
//
// The end is filtered on and sorted by, never returned: pg_get_expr reads
// the catalog as it is now, not as of the query's snapshot, so a partition
// that another replica's pruner drops during the query has a NULL end in
// whichever evaluation comes after the drop, the WHERE's or the SELECT
// list's (TestPartitionsConcurrently found the second under load). Its
// name is listed all the same, and the drop below finds it gone.
const assetPartitions = `SELECT relname, rows FROM (
	SELECT c.relname,
		(regexp_match(pg_get_expr(c.relpartbound, c.oid), 'TO \(''([^'']+)''\)'))[1]::timestamptz AS hi,
		c.reltuples::bigint AS rows
	FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
	WHERE i.inhparent = 'assets'::regclass) p
	WHERE hi <= $1 ORDER BY hi`

// DropAssetPartitionsBefore drops each partition of assets that holds only
// times before cutoff, and returns how many it dropped and about how many
// rows they held. A partition whose lock it could not take within
// partitionLockTimeout is left for the next call, which the returned error
// says.
func (s *Store) DropAssetPartitionsBefore(ctx context.Context, cutoff time.Time) (int, int64, error) {
	type partition struct {
		name string
		rows int64
	}
	var expired []partition
	rows, err := s.primary.Query(ctx, assetPartitions, secondBefore(cutoff))
	if err != nil {
		return 0, 0, fmt.Errorf("postgres: list assets partitions: %w", err)
	}
	for rows.Next() {
		var p partition
		if err := rows.Scan(&p.name, &p.rows); err != nil {
			rows.Close()
			return 0, 0, fmt.Errorf("postgres: list assets partitions: %w", err)
		}
		expired = append(expired, p)
	}
	if err := rows.Err(); err != nil {
		return 0, 0, fmt.Errorf("postgres: list assets partitions: %w", err)
	}
	dropped, gone := 0, int64(0)
	for _, p := range expired {
		err := pgx.BeginFunc(ctx, s.primary, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, setLockTimeout); err != nil {
				return err
			}
			// The DROP's own first lock, taken first, so that processes
			// dropping at once queue on it instead of deadlocking on the
			// partition's lock, which the count below takes.
			if _, err := tx.Exec(ctx, `LOCK TABLE assets IN ACCESS EXCLUSIVE MODE`); err != nil {
				return err
			}
			var exists bool
			if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, pgx.Identifier{p.name}.Sanitize()).Scan(&exists); err != nil {
				return err
			}
			if !exists {
				return errGone // another process dropped it since
			}
			if p.rows < 0 {
				if err := tx.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{p.name}.Sanitize()).Scan(&p.rows); err != nil {
					return err
				}
			}
			_, err := tx.Exec(ctx, `DROP TABLE `+pgx.Identifier{p.name}.Sanitize())
			return err
		})
		if errors.Is(err, errGone) {
			continue
		}
		if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && pgErr.Code == lockNotAvailable {
			return dropped, gone, fmt.Errorf("postgres: drop assets partition %s: the table stayed locked for %s; left for the next run", p.name, partitionLockTimeout)
		}
		if err != nil {
			return dropped, gone, fmt.Errorf("postgres: drop assets partition %s: %w", p.name, err)
		}
		dropped++
		gone += p.rows
	}
	return dropped, gone, nil
}

// errGone is how a drop's transaction says that its partition is gone.
var errGone = errors.New("postgres: the partition is gone")

// utcDay returns the start of t's day in UTC.
func utcDay(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}
