-- The positions of the log followers (cdnapi follow, see cdnapi.LogPosition):
-- one row per followed stream, moved by a compare-and-set in the same
-- transaction as the rows it covers. Same meaning as SQLite's 00008.
--
-- device and inode are Go uint64s stored as the bigint of the same bits:
-- PostgreSQL has no unsigned type, and pgx refuses a uint64 at or above
-- 2^63 for a bigint, which a device number can be. They are only compared
-- for equality, so the sign of the bit pattern does not matter, and a
-- bigint costs less than numeric in every comparison of the CAS.
-- stream is COLLATE "C" so that LogPositions orders byte-wise, like SQLite.
-- Times keep microseconds: now minus newest_at is a follower's lag.

-- +goose Up
CREATE TABLE log_positions (
    stream     text COLLATE "C" NOT NULL PRIMARY KEY,
    path       text             NOT NULL,
    device     bigint           NOT NULL, -- uint64 as int64 bits
    inode      bigint           NOT NULL, -- uint64 as int64 bits
    "offset"   bigint           NOT NULL CHECK ("offset" >= 0),
    head       text             NOT NULL,
    head_bytes bigint           NOT NULL CHECK (head_bytes >= 0),
    lines      bigint           NOT NULL CHECK (lines >= 0),
    newest_at  timestamptz,                -- NULL: no request committed yet
    updated_at timestamptz      NOT NULL
);

-- +goose Down
DROP TABLE log_positions;
