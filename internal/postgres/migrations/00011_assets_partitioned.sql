-- The assets, partitioned by time: one partition per UTC day of created_at,
-- so that retention drops a whole expired day (DROP TABLE costs the same at
-- any size, and leaves no dead rows for autovacuum) instead of deleting it
-- row by row. See partitions.go for why a day and not an hour, for how
-- partitions are made ahead and dropped, and docs/sizing.md for the cost.
--
-- * The primary key is (id, created_at): PostgreSQL requires a partitioned
--   table's unique keys to hold its partition key. An asset's ID stays
--   unique through the writes (see write.go: a write of an ID deletes the
--   row of that ID at another time first).
-- * assets_default takes a row whose day has no partition yet (a clock far
--   ahead, or the days before the first partition once assets_legacy is
--   dropped), so no write fails; assets_add_partition moves such rows into
--   their day's partition when it makes it.
--
-- The migration works on a live database. Today's table is not copied: it
-- becomes the partition assets_legacy, FROM (MINVALUE) TO the start of the
-- UTC day after tomorrow, and is dropped whole once all of it has expired
-- (at once, when it is empty).
-- The steps that read the whole table (a unique index built CONCURRENTLY,
-- a CHECK validated) take locks that let reads and writes go on; the
-- switch itself takes the table's ACCESS EXCLUSIVE lock for the few
-- milliseconds of renaming it and attaching it. While the CHECK is in
-- place (until the switch), a write of an asset dated after the boundary
-- fails, and its writer retries: ingest is idempotent.

-- +goose NO TRANSACTION
-- +goose Up

-- An index left invalid by an interrupted run is dropped, and built again.
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_index WHERE indexrelid = to_regclass('assets_id_created') AND NOT indisvalid) THEN
        DROP INDEX assets_id_created;
    END IF;
END
$$;
-- +goose StatementEnd

CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS assets_id_created ON assets (id, created_at);

-- +goose StatementBegin
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conname = 'assets_legacy_range' AND conrelid = to_regclass('assets')) THEN
        EXECUTE format('ALTER TABLE assets ADD CONSTRAINT assets_legacy_range CHECK (created_at < %L) NOT VALID',
            date_trunc('day', now(), 'UTC') + interval '2 days');
    END IF;
END
$$;
-- +goose StatementEnd

ALTER TABLE assets VALIDATE CONSTRAINT assets_legacy_range;

-- assets_add_partition makes the partition of one UTC day, moving into it
-- the rows of that day that the default partition holds, and reports
-- whether it made one: not when it exists, nor when another partition
-- (assets_legacy) covers the day. It locks the default partition against
-- writes while it runs, for as long as moving those rows takes: none, when
-- partitions are made ahead of time.
-- +goose StatementBegin
CREATE FUNCTION assets_add_partition(day date) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    lo   timestamptz := day::timestamp AT TIME ZONE 'UTC';
    hi   timestamptz := (day + 1)::timestamp AT TIME ZONE 'UTC';
    name text        := 'assets_p' || to_char(day, 'YYYYMMDD');
BEGIN
    IF to_regclass(quote_ident(name)) IS NOT NULL THEN
        RETURN false;
    END IF;
    BEGIN
        -- The locks conflict with themselves: two processes making the
        -- same day take turns, and the second finds the partition made.
        -- The partitioned table first, as a DROP of a partition takes it
        -- before the default partition: the other order could deadlock.
        -- Neither lock stops reads; the second stops writes into the
        -- default partition while its rows move.
        LOCK TABLE assets IN SHARE UPDATE EXCLUSIVE MODE;
        LOCK TABLE assets_default IN SHARE ROW EXCLUSIVE MODE;
        IF to_regclass(quote_ident(name)) IS NOT NULL THEN
            RETURN false;
        END IF;
        EXECUTE format('CREATE TABLE %I (LIKE assets INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', name);
        EXECUTE format('WITH moved AS (DELETE FROM assets_default WHERE created_at >= $1 AND created_at < $2 RETURNING *)
            INSERT INTO %I SELECT * FROM moved', name) USING lo, hi;
        EXECUTE format('ALTER TABLE assets ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', name, lo, hi);
    EXCEPTION WHEN invalid_object_definition OR duplicate_table THEN
        RETURN false; -- overlaps a partition that covers the day already, or was just made
    END;
    RETURN true;
END
$$;
-- +goose StatementEnd

-- assets_delete_before deletes the oldest assets created before cutoff, up
-- to lim of them, and returns how many. It picks them in the list's order
-- over every partition (a backward walk of each partition's
-- assets_by_created, merged), then deletes each partition's share by
-- physical address (ctid, which names a row only within its partition): a
-- batch costs its own rows, as on the unpartitioned table. The repeated
-- created_at test guards against an upsert that renewed a row meanwhile:
-- the DELETE re-checks its conditions on the newest version of the row.
-- +goose StatementBegin
CREATE FUNCTION assets_delete_before(cutoff timestamptz, lim bigint) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    part  regclass;
    tids  tid[];
    n     bigint;
    total bigint := 0;
BEGIN
    FOR part, tids IN
        SELECT o.tableoid::regclass, array_agg(o.ctid) FROM (
            SELECT tableoid, ctid FROM assets WHERE created_at < cutoff
            ORDER BY created_at, id LIMIT lim) o
        GROUP BY o.tableoid
    LOOP
        EXECUTE format('DELETE FROM %s WHERE ctid = ANY ($1) AND created_at < $2', part) USING tids, cutoff;
        GET DIAGNOSTICS n = ROW_COUNT;
        total := total + n;
    END LOOP;
    RETURN total;
END
$$;
-- +goose StatementEnd

-- The switch, in one statement and so one transaction.
-- +goose StatementBegin
DO $$
DECLARE
    boundary timestamptz;
BEGIN
    SELECT substring(pg_get_constraintdef(oid) FROM '''([^'']+)''')::timestamptz INTO boundary
    FROM pg_constraint WHERE conname = 'assets_legacy_range' AND conrelid = 'assets'::regclass;

    ALTER TABLE assets RENAME TO assets_legacy;
    ALTER INDEX assets_by_created RENAME TO assets_legacy_by_created;
    ALTER INDEX assets_by_region_created RENAME TO assets_legacy_by_region_created;
    ALTER TABLE assets_legacy DROP CONSTRAINT assets_pkey;
    ALTER TABLE assets_legacy ADD CONSTRAINT assets_legacy_pkey PRIMARY KEY USING INDEX assets_id_created;

    CREATE TABLE assets (
        id           text COLLATE "C" NOT NULL,
        created_at   timestamptz(0)   NOT NULL,
        path         text             NOT NULL,
        bytes        bigint           NOT NULL CONSTRAINT assets_bytes_check CHECK (bytes >= 0),
        cache_status text             NOT NULL CONSTRAINT assets_cache_status_check CHECK (cache_status IN
            ('HIT', 'MISS', 'EXPIRED', 'STALE', 'UPDATING', 'REVALIDATED', 'BYPASS', 'DYNAMIC')),
        region       text COLLATE "C" NOT NULL,
        PRIMARY KEY (id, created_at)
    ) PARTITION BY RANGE (created_at);
    -- The keyset indexes of GET /api/v1/assets, as before, in every partition.
    CREATE INDEX assets_by_created ON assets (created_at DESC, id DESC);
    CREATE INDEX assets_by_region_created ON assets (region, created_at DESC, id DESC);

    -- The validated CHECK spares ATTACH its scan of the table.
    EXECUTE format('ALTER TABLE assets ATTACH PARTITION assets_legacy FOR VALUES FROM (MINVALUE) TO (%L)', boundary);
    ALTER TABLE assets_legacy DROP CONSTRAINT assets_legacy_range;
    CREATE TABLE assets_default PARTITION OF assets DEFAULT;
    -- An empty table (a new database) needs no legacy partition: without
    -- it, every day gets a partition of its own.
    IF NOT EXISTS (SELECT 1 FROM assets_legacy) THEN
        DROP TABLE assets_legacy;
    END IF;
    -- Today and the two days ahead, where the legacy partition does not
    -- cover them; serve's pruner keeps making them.
    PERFORM assets_add_partition((now() AT TIME ZONE 'UTC')::date + d) FROM generate_series(0, 3) AS d;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- Back to one table, by copying every row: the way down reads and writes
-- the whole table, and holds it locked meanwhile.
-- +goose StatementBegin
DO $$
BEGIN
    CREATE TABLE assets_plain (
        id           text COLLATE "C" NOT NULL PRIMARY KEY,
        created_at   timestamptz(0)   NOT NULL,
        path         text             NOT NULL,
        bytes        bigint           NOT NULL CHECK (bytes >= 0),
        cache_status text             NOT NULL CHECK (cache_status IN
            ('HIT', 'MISS', 'EXPIRED', 'STALE', 'UPDATING', 'REVALIDATED', 'BYPASS', 'DYNAMIC')),
        region       text COLLATE "C" NOT NULL
    );
    INSERT INTO assets_plain SELECT id, created_at, path, bytes, cache_status, region FROM assets;
    DROP TABLE assets;
    DROP FUNCTION assets_add_partition(date);
    DROP FUNCTION assets_delete_before(timestamptz, bigint);
    ALTER TABLE assets_plain RENAME TO assets;
    ALTER INDEX assets_plain_pkey RENAME TO assets_pkey;
    ALTER TABLE assets RENAME CONSTRAINT assets_plain_bytes_check TO assets_bytes_check;
    ALTER TABLE assets RENAME CONSTRAINT assets_plain_cache_status_check TO assets_cache_status_check;
    CREATE INDEX assets_by_created ON assets (created_at DESC, id DESC);
    CREATE INDEX assets_by_region_created ON assets (region, created_at DESC, id DESC);
END
$$;
-- +goose StatementEnd
