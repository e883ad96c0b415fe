-- Files are clustered on (project, created_at, id): a WITHOUT ROWID table
-- whose primary key is the order of GET /api/v1/files. A page of the list
-- is then one seek and a contiguous scan of the table, which the list reads
-- backwards: newest first. Before, the list scanned files_by_project_created
-- and looked every row up in the table by its random ID, one more b-tree
-- descent per row, which was most of the time SQLite spent on a page. Over
-- a million files, BenchmarkListFiles/random (pages of 20 at random
-- positions) took 44 µs a page in this shape against 62 µs in 00001's, and
-- the files' b-trees took 201 MB instead of 245 MB: the old list index,
-- filled at its left edge, had half-empty pages.
--
-- The primary key is ascending, like 00002's keyset indexes: files arrive
-- newest last, so rows append at the right edge of their project's range,
-- where pages fill, instead of going in at the left edge, where they split
-- half full. The plans read it backwards (see TestQueryPlans).
--
-- An upsert that changes a file's project or created_at moves the row within
-- the table, which SQLite does as a delete and an insert; ON CONFLICT (id)
-- still finds the row through files_by_id, which SQLite checks before the
-- primary key.
--
-- Rows are copied in the new key order, so the table is written once, left
-- to right.

-- +goose Up
CREATE TABLE files_new (
    id         TEXT    NOT NULL,
    project    TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    filename   TEXT    NOT NULL,
    bytes      INTEGER NOT NULL CHECK (bytes >= 0),
    checksum   TEXT    NOT NULL,
    PRIMARY KEY (project, created_at, id)
) WITHOUT ROWID;
INSERT INTO files_new (id, project, created_at, filename, bytes, checksum)
    SELECT id, project, created_at, filename, bytes, checksum FROM files ORDER BY project, created_at, id;
DROP TABLE files;
ALTER TABLE files_new RENAME TO files;

-- The key of upserts (ON CONFLICT (id)); it also keeps IDs unique, which
-- the primary key alone would not.
CREATE UNIQUE INDEX files_by_id ON files (id);

-- +goose Down
CREATE TABLE files_old (
    id         TEXT    NOT NULL PRIMARY KEY,
    project    TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    filename   TEXT    NOT NULL,
    bytes      INTEGER NOT NULL CHECK (bytes >= 0),
    checksum   TEXT    NOT NULL
) WITHOUT ROWID;
INSERT INTO files_old (id, project, created_at, filename, bytes, checksum)
    SELECT id, project, created_at, filename, bytes, checksum FROM files ORDER BY id;
DROP TABLE files;
ALTER TABLE files_old RENAME TO files;
CREATE INDEX files_by_project_created ON files (project, created_at DESC, id DESC);
