-- Assets become a rowid table, with the ID in a unique index and the keyset
-- indexes in ascending order. Ingest writes millions of assets whose IDs,
-- from edge logs, are random. On a table of a million assets,
-- BenchmarkWriteAssets wrote 71,000 rows/s with random IDs into 00001's
-- shape and 111,000 into this one (155,000 and 230,000 with time-sortable
-- IDs):
--
-- * 00001 clustered the rows, about 100 bytes each, on their random IDs, so
--   every insert dirtied a page somewhere in the whole table. Now rows go to
--   the end of the table in the order they arrive, which is roughly time
--   order, and only the unique index on id, at about 40 bytes an entry, takes
--   random inserts; it stays in the writer's page cache far longer.
-- * The keyset indexes ran DESC, so every new asset, the newest, went in at
--   their left edge, where b-tree pages split half full. Ascending, new
--   entries append at the right edge, where pages fill. The lists read them
--   backwards; the plans are the same range scans (see TestQueryPlans).
-- * CHECK (cache_status IN (eight values)) made SQLite build a temporary
--   b-tree of the eight values for every row it checked; the same test
--   written as comparisons costs nothing of the kind.
--
-- Rows are copied oldest first so that rowid order follows time order, which
-- keeps a page of the list on few table pages.

-- +goose Up
CREATE TABLE assets_new (
    id           TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    path         TEXT    NOT NULL,
    bytes        INTEGER NOT NULL CHECK (bytes >= 0),
    cache_status TEXT    NOT NULL CHECK (
        cache_status = 'HIT' OR cache_status = 'MISS' OR cache_status = 'EXPIRED' OR
        cache_status = 'STALE' OR cache_status = 'UPDATING' OR cache_status = 'REVALIDATED' OR
        cache_status = 'BYPASS' OR cache_status = 'DYNAMIC'),
    region       TEXT    NOT NULL
);
INSERT INTO assets_new (id, created_at, path, bytes, cache_status, region)
    SELECT id, created_at, path, bytes, cache_status, region FROM assets ORDER BY created_at, id;
DROP TABLE assets;
ALTER TABLE assets_new RENAME TO assets;

-- The key of upserts (ON CONFLICT (id)).
CREATE UNIQUE INDEX assets_by_id ON assets (id);
-- The keyset indexes of GET /api/v1/assets, without and with a region, read
-- backwards: newest first.
CREATE INDEX assets_by_created ON assets (created_at, id);
CREATE INDEX assets_by_region_created ON assets (region, created_at, id);

-- +goose Down
CREATE TABLE assets_old (
    id           TEXT    NOT NULL PRIMARY KEY,
    created_at   INTEGER NOT NULL,
    path         TEXT    NOT NULL,
    bytes        INTEGER NOT NULL CHECK (bytes >= 0),
    cache_status TEXT    NOT NULL CHECK (cache_status IN
        ('HIT', 'MISS', 'EXPIRED', 'STALE', 'UPDATING', 'REVALIDATED', 'BYPASS', 'DYNAMIC')),
    region       TEXT    NOT NULL
) WITHOUT ROWID;
INSERT INTO assets_old (id, created_at, path, bytes, cache_status, region)
    SELECT id, created_at, path, bytes, cache_status, region FROM assets;
DROP TABLE assets;
ALTER TABLE assets_old RENAME TO assets;
CREATE INDEX assets_by_created ON assets (created_at DESC, id DESC);
CREATE INDEX assets_by_region_created ON assets (region, created_at DESC, id DESC);
