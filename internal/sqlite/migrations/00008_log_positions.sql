-- The positions of the log followers (cdnapi follow, see cdnapi.LogPosition):
-- one row per followed stream, moved by a compare-and-set in the same
-- transaction as the rows it covers.
--
-- device and inode are Go uint64s stored as the int64 of the same bits: a
-- SQLite INTEGER is signed 64-bit, and database/sql refuses a uint64 at or
-- above 2^63, which a device number can be (st_dev packs major and minor;
-- an overlay or network file system may set the top bit). They are only
-- compared for equality, so the sign of the bit pattern does not matter.
-- Times are unix microseconds, as PostgreSQL keeps them: now minus
-- newest_at is a follower's lag, finer than a second is worth having.

-- +goose Up
CREATE TABLE log_positions (
    stream     TEXT    NOT NULL PRIMARY KEY,
    path       TEXT    NOT NULL,
    device     INTEGER NOT NULL, -- uint64 as int64 bits
    inode      INTEGER NOT NULL, -- uint64 as int64 bits
    "offset"   INTEGER NOT NULL CHECK ("offset" >= 0),
    head       TEXT    NOT NULL,
    head_bytes INTEGER NOT NULL CHECK (head_bytes >= 0),
    lines      INTEGER NOT NULL CHECK (lines >= 0),
    newest_at  INTEGER,          -- NULL: no request committed yet
    updated_at INTEGER NOT NULL
) WITHOUT ROWID;

-- +goose Down
DROP TABLE log_positions;
