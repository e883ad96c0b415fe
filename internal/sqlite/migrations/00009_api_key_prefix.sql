-- The first characters of each API key ("cdk_" and 4 of its 32 random
-- ones), which keys list shows so that a key found in a log or a leak can be
-- matched to its ID. 4 of 32 base62 characters give away 24 of 190 bits.
-- Keys created before this migration have none ('').

-- +goose Up
ALTER TABLE api_keys ADD COLUMN prefix TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE api_keys DROP COLUMN prefix;
