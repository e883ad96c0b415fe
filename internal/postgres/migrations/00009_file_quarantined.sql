-- The file.quarantined event (cdnapi.QuarantineRecorder): an upload the
-- virus scanner found infected. Same meaning as SQLite's 00012: no trigger
-- writes it; the store's RecordQuarantine inserts it under an ID made from
-- the upload (cdnapi.QuarantineEventID) with ON CONFLICT (id) DO NOTHING,
-- so a scanner's retry after a crash writes, and queues, one event. 00007's
-- events_queued trigger queues it like any other; a row ON CONFLICT skips
-- fires no AFTER INSERT trigger.
--
-- The type CHECK admits it, status may be NULL (a quarantine has none),
-- and five columns hold the quarantine; subject holds its project.

-- +goose Up
ALTER TABLE events DROP CONSTRAINT events_type_check;
ALTER TABLE events ADD CONSTRAINT events_type_check CHECK (type IN
    ('incident.opened', 'incident.updated', 'incident.resolved', 'region.changed', 'file.quarantined'));
ALTER TABLE events ALTER COLUMN status DROP NOT NULL;
ALTER TABLE events
    ADD COLUMN path           text,           -- file.quarantined
    ADD COLUMN bytes          bigint,
    ADD COLUMN checksum       text,
    ADD COLUMN signature      text,
    ADD COLUMN quarantined_at timestamptz(0),
    ADD CONSTRAINT events_status_check CHECK ((status IS NULL) = (type = 'file.quarantined'));

-- +goose Down
DELETE FROM webhook_jobs WHERE event_seq IN (SELECT seq FROM events WHERE type = 'file.quarantined');
DELETE FROM events WHERE type = 'file.quarantined';
ALTER TABLE events
    DROP CONSTRAINT events_status_check,
    DROP COLUMN quarantined_at,
    DROP COLUMN signature,
    DROP COLUMN checksum,
    DROP COLUMN bytes,
    DROP COLUMN path;
ALTER TABLE events ALTER COLUMN status SET NOT NULL;
ALTER TABLE events DROP CONSTRAINT events_type_check;
ALTER TABLE events ADD CONSTRAINT events_type_check CHECK (type IN
    ('incident.opened', 'incident.updated', 'incident.resolved', 'region.changed'));
