-- The first schema of cdnapi.
--
-- Every timestamp is INTEGER unix seconds, UTC: the API shows whole seconds,
-- and cursors carry whole seconds, so storing anything finer would let a
-- cursor's position fall between rows that the API shows as equal.
--
-- Text compares with SQLite's BINARY collation (byte order), which is the
-- order the keyset cursors, and every other engine, must agree on.

-- +goose Up
-- A file is looked up by its ID only on upsert; the lists walk
-- files_by_project_created. WITHOUT ROWID clusters the table on id, so an
-- upsert costs two b-trees instead of three (rowid table, id index, list
-- index), and the rows (~150 bytes) are small enough for it.
CREATE TABLE files (
    id         TEXT    NOT NULL PRIMARY KEY,
    project    TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    filename   TEXT    NOT NULL,
    bytes      INTEGER NOT NULL CHECK (bytes >= 0),
    checksum   TEXT    NOT NULL
) WITHOUT ROWID;

-- The keyset index of GET /api/v1/files: one project, newest first.
CREATE INDEX files_by_project_created ON files (project, created_at DESC, id DESC);

CREATE TABLE assets (
    id           TEXT    NOT NULL PRIMARY KEY,
    created_at   INTEGER NOT NULL,
    path         TEXT    NOT NULL,
    bytes        INTEGER NOT NULL CHECK (bytes >= 0),
    cache_status TEXT    NOT NULL CHECK (cache_status IN
        ('HIT', 'MISS', 'EXPIRED', 'STALE', 'UPDATING', 'REVALIDATED', 'BYPASS', 'DYNAMIC')),
    region       TEXT    NOT NULL
) WITHOUT ROWID;

-- The keyset indexes of GET /api/v1/assets, without and with a region.
CREATE INDEX assets_by_created ON assets (created_at DESC, id DESC);
CREATE INDEX assets_by_region_created ON assets (region, created_at DESC, id DESC);

CREATE TABLE regions (
    code    TEXT NOT NULL PRIMARY KEY,
    name    TEXT NOT NULL,
    zone    TEXT NOT NULL,
    country TEXT NOT NULL,
    status  TEXT NOT NULL CHECK (status IN
        ('operational', 'degraded_performance', 'partial_outage', 'major_outage', 'under_maintenance'))
) WITHOUT ROWID;

-- Statuses an operator set by hand; a component without a row is measured.
CREATE TABLE component_overrides (
    name       TEXT    NOT NULL PRIMARY KEY,
    status     TEXT    NOT NULL CHECK (status IN
        ('operational', 'degraded_performance', 'partial_outage', 'major_outage', 'under_maintenance')),
    until      INTEGER,          -- NULL: until cleared
    updated_at INTEGER NOT NULL
) WITHOUT ROWID;

-- Values the service generates once and every replica shares, such as the
-- cursor secret.
CREATE TABLE settings (
    name  TEXT NOT NULL PRIMARY KEY,
    value BLOB NOT NULL
) WITHOUT ROWID;

-- +goose Down
DROP TABLE settings;
DROP TABLE component_overrides;
DROP TABLE regions;
DROP TABLE assets;
DROP TABLE files;
