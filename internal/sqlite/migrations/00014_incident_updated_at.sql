-- An incident's last change (cdnapi.Incident.UpdatedAt): when it opened,
-- got a worse status or a new message, or resolved. The Atom feed gives it
-- as the entry's updated, so that a reader shows the same changes the
-- webhooks send as incident.updated. UpdateIncident moves it in the
-- statement that makes the change. Existing rows take their last known
-- change: the resolution, else the start.

-- +goose Up
ALTER TABLE incidents ADD COLUMN updated_at INTEGER;
UPDATE incidents SET updated_at = coalesce(resolved_at, started_at);

-- +goose Down
ALTER TABLE incidents DROP COLUMN updated_at;
