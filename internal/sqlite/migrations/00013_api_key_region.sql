-- The region an edge key is bound to (cdnapi.APIKey.Region): an edge may
-- send the lines of its own region only. NULL for every other scope, and
-- for the keys made before regions, none of which was an edge key in use.
-- The CHECK holds the shape; keys create holds that an edge key has one.

-- +goose Up
ALTER TABLE api_keys ADD COLUMN region TEXT
    CHECK (region IS NULL OR (length(region) = 4 AND region GLOB '[A-Z][A-Z][A-Z][0-9]'));

-- +goose Down
ALTER TABLE api_keys DROP COLUMN region;
