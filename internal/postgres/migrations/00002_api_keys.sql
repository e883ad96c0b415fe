-- API keys, stored only as the SHA-256 hashes of the keys (see cdnapi.APIKey).
-- NULL times mean never (expires, used, revoked). Every process loads the
-- whole table into memory every few seconds (see internal/auth), so no index
-- beyond the keys is needed.

-- +goose Up
CREATE TABLE api_keys (
    id           text COLLATE "C" NOT NULL PRIMARY KEY,
    hash         bytea            NOT NULL UNIQUE CHECK (length(hash) = 32),
    project      text COLLATE "C" NOT NULL,
    label        text             NOT NULL,
    created_at   timestamptz(0)   NOT NULL,
    expires_at   timestamptz(0),
    last_used_at timestamptz(0),
    revoked_at   timestamptz(0)
);

-- +goose Down
DROP TABLE api_keys;
