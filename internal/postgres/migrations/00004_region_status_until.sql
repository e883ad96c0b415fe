-- A region's status may have an end: `cdnapi regions set-status CODE STATUS
-- --until T` stores the status together with status_until and, in
-- status_set, the status that the end belongs to. Reads show the region as
-- operational from status_until on, while its status is still status_set;
-- an ingest that writes another status since then wins, and its status has
-- no end. Nothing needs to run at status_until: expiry is decided when a
-- region is read, so a replica or a stopped process never shows an expired
-- status.

-- +goose Up
ALTER TABLE regions ADD COLUMN status_until timestamptz(0); -- NULL: no end
ALTER TABLE regions ADD COLUMN status_set text;

-- +goose Down
ALTER TABLE regions DROP COLUMN status_set;
ALTER TABLE regions DROP COLUMN status_until;
