-- The first schema of cdnapi on PostgreSQL. It keeps the SQLite schema's
-- meaning, so that both engines pass one behaviour suite:
--
-- * Every id, code and name that a list is ordered by is text COLLATE "C":
--   byte order, as SQLite's BINARY, whatever the database's default collation
--   (often en_US, which would sort "fil_a" before "fil_B"). A cursor from one
--   engine's order must mean the same on every replica.
-- * Timestamps are timestamptz(0): whole seconds, which the API shows and
--   the cursors carry; storing finer would let a cursor's position fall
--   between rows that the API shows as equal. timestamptz rather than bigint
--   unix seconds: the same 8 bytes and the same index order, but readable in
--   psql and ready for interval arithmetic (retention).

-- +goose Up
CREATE TABLE files (
    id         text COLLATE "C" NOT NULL PRIMARY KEY,
    project    text COLLATE "C" NOT NULL,
    created_at timestamptz(0)   NOT NULL,
    filename   text             NOT NULL,
    bytes      bigint           NOT NULL CHECK (bytes >= 0),
    checksum   text             NOT NULL
);

-- The keyset index of GET /api/v1/files: one project, newest first. The
-- query's ORDER BY created_at DESC, id DESC reads it forwards.
CREATE INDEX files_by_project_created ON files (project, created_at DESC, id DESC);

CREATE TABLE assets (
    id           text COLLATE "C" NOT NULL PRIMARY KEY,
    created_at   timestamptz(0)   NOT NULL,
    path         text             NOT NULL,
    bytes        bigint           NOT NULL CHECK (bytes >= 0),
    cache_status text             NOT NULL CHECK (cache_status IN
        ('HIT', 'MISS', 'EXPIRED', 'STALE', 'UPDATING', 'REVALIDATED', 'BYPASS', 'DYNAMIC')),
    region       text COLLATE "C" NOT NULL
);

-- The keyset indexes of GET /api/v1/assets, without and with a region.
CREATE INDEX assets_by_created ON assets (created_at DESC, id DESC);
CREATE INDEX assets_by_region_created ON assets (region, created_at DESC, id DESC);

CREATE TABLE regions (
    code    text COLLATE "C" NOT NULL PRIMARY KEY,
    name    text             NOT NULL,
    zone    text             NOT NULL,
    country text             NOT NULL,
    status  text             NOT NULL CHECK (status IN
        ('operational', 'degraded_performance', 'partial_outage', 'major_outage', 'under_maintenance'))
);

-- Statuses an operator set by hand; a component without a row is measured.
CREATE TABLE component_overrides (
    name       text COLLATE "C" NOT NULL PRIMARY KEY,
    status     text             NOT NULL CHECK (status IN
        ('operational', 'degraded_performance', 'partial_outage', 'major_outage', 'under_maintenance')),
    until      timestamptz(0),            -- NULL: until cleared
    updated_at timestamptz(0)   NOT NULL
);

-- Values the service generates once and every replica shares, such as the
-- cursor secret.
CREATE TABLE settings (
    name  text COLLATE "C" NOT NULL PRIMARY KEY,
    value bytea            NOT NULL
);

-- +goose Down
DROP TABLE settings;
DROP TABLE component_overrides;
DROP TABLE regions;
DROP TABLE assets;
DROP TABLE files;
