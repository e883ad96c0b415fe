-- A webhook's secret can be rotated (cdnapi.WebhookStore.RotateWebhookSecret).
-- Same meaning as SQLite's 00016: the old secret also signs each delivery
-- until previous_until; NULL for no rotation in its grace.

-- +goose Up
ALTER TABLE webhooks
    ADD COLUMN previous_secret text,
    ADD COLUMN previous_until  timestamptz(0);

-- +goose Down
ALTER TABLE webhooks
    DROP COLUMN previous_until,
    DROP COLUMN previous_secret;
