-- An incident's last change (cdnapi.Incident.UpdatedAt): when it opened,
-- got a worse status or a new message, or resolved. Same meaning as
-- SQLite's 00015: UpdateIncident moves it in the statement that makes the
-- change, and existing rows take the resolution, else the start.

-- +goose Up
ALTER TABLE incidents ADD COLUMN updated_at timestamptz(0);
UPDATE incidents SET updated_at = coalesce(resolved_at, started_at);
ALTER TABLE incidents ALTER COLUMN updated_at SET NOT NULL;

-- +goose Down
ALTER TABLE incidents DROP COLUMN updated_at;
