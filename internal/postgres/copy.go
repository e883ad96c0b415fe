package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// uniqueViolation is PostgreSQL's SQLSTATE for a duplicate key.
const uniqueViolation = "23505"

// maxDirectCopies caps the batches of one Write that copyExec COPYs
// straight into their table. Each runs in a savepoint, and each savepoint
// that wrote keeps a subtransaction ID until the commit; past 64 of them
// (PGPROC_MAX_CACHED_SUBXIDS) the transaction "overflows", and every other
// session's snapshot, on the primary and on hot standbys, must then look
// its subtransactions up in pg_subtrans until it commits. Later batches
// take the upsert path, which needs no savepoint.
const maxDirectCopies = 60

// copyExec upserts n rows (distinct keys) with COPY. When none of their
// keys is in the table yet, as when loading new edge logs, it COPYs them
// straight in, in a savepoint; when one is, the COPY fails on the unique
// index, the savepoint is rolled back, and the rows are upserted through a
// staging table. That holds under concurrency too: a COPY that meets a key
// another transaction inserted and has not committed waits for it, then
// fails if it commits.
//
// The direct COPY skips the speculative insertion of INSERT … ON CONFLICT,
// which costs the server about a third more per row than a plain insert
// (500k new assets into a million with psql: 3.0 s vs 4.2 s). Through this
// package, 500k new assets with random IDs in batches of 16,000 went from
// 53–73k rows/s to 75–125k.
func (b *batcher) copyExec(ctx context.Context, u *upsert, n int, row func(i int) []any) error {
	rows := make([][]any, n)
	for i := range rows {
		rows[i] = row(i)
	}
	if b.directLeft > 0 {
		done, err := b.copyDirect(ctx, u, rows)
		if done || err != nil {
			return err
		}
	}
	return b.stageAndUpsert(ctx, u, rows)
}

// copyDirect COPYs rows straight into u's table, in a savepoint. It reports
// false, having written nothing, when a key of rows is already there.
//
// It tries the COPY first, unchecked, as long as no batch of b has met a
// key in u's table: new logs rarely repeat a row, and a COPY that fails on
// its first row (the same input again) costs little. Once one has, it asks
// first, since a COPY that failed late would leave a batch of dead rows
// behind. Asking costs an index probe per key (a quarter of the time of
// the insert with random IDs), which the unchecked COPY saves.
func (b *batcher) copyDirect(ctx context.Context, u *upsert, rows [][]any) (bool, error) {
	if b.conflicted[u.table] {
		keys := make([]string, len(rows))
		for i, r := range rows {
			keys[i] = r[0].(string)
		}
		var taken bool
		if err := b.tx.QueryRow(ctx, u.anyKeyTaken(), keys).Scan(&taken); err != nil || taken {
			return false, err
		}
	}
	sp, err := b.tx.Begin(ctx) // SAVEPOINT
	if err != nil {
		return false, err
	}
	b.directLeft--
	if _, err := sp.CopyFrom(ctx, pgx.Identifier{u.table}, u.columns, pgx.CopyFromRows(rows)); err != nil {
		if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && pgErr.Code == uniqueViolation {
			b.conflicted[u.table] = true
			return false, sp.Rollback(ctx)
		}
		return false, err
	}
	return true, sp.Commit(ctx) // RELEASE SAVEPOINT
}

// stageAndUpsert streams the rows into u's staging table with COPY and
// upserts them from there in one statement. The table is created at the
// first COPY of a transaction and dropped at its end; a later batch in the
// same transaction empties and reuses it.
func (b *batcher) stageAndUpsert(ctx context.Context, u *upsert, rows [][]any) error {
	prepare := u.truncateStaging()
	if !b.staged[u.table] {
		prepare = u.createStaging()
	}
	if _, err := b.tx.Exec(ctx, prepare); err != nil {
		return err
	}
	b.staged[u.table] = true
	if _, err := b.tx.CopyFrom(ctx, pgx.Identifier{u.staging()}, u.columns, pgx.CopyFromRows(rows)); err != nil {
		return err
	}
	_, err := b.tx.Exec(ctx, u.fromStaging())
	return err
}
