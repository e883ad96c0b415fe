-- API keys, stored only as the SHA-256 hashes of the keys (see cdnapi.APIKey).
-- Times are unix seconds; NULL means never (expires, used, revoked).
-- Every process loads the whole table into memory every few seconds (see
-- internal/auth), so no index beyond the keys is needed.

-- +goose Up
CREATE TABLE api_keys (
    id           TEXT    NOT NULL PRIMARY KEY,
    hash         BLOB    NOT NULL UNIQUE CHECK (length(hash) = 32),
    project      TEXT    NOT NULL,
    label        TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER,
    last_used_at INTEGER,
    revoked_at   INTEGER
);

-- +goose Down
DROP TABLE api_keys;
