-- A webhook's secret can be rotated (cdnapi.WebhookStore.RotateWebhookSecret):
-- the old secret is kept as previous_secret, and signs each delivery with
-- the new one until previous_until (Unix seconds), so that receivers can
-- move to the new secret without failing a delivery. NULL: no rotation in
-- its grace.

-- +goose Up
ALTER TABLE webhooks ADD COLUMN previous_secret TEXT;
ALTER TABLE webhooks ADD COLUMN previous_until INTEGER;

-- +goose Down
ALTER TABLE webhooks DROP COLUMN previous_until;
ALTER TABLE webhooks DROP COLUMN previous_secret;
