-- The file.quarantined event (cdnapi.QuarantineRecorder): an upload the
-- virus scanner found infected. Unlike the others, no trigger writes it:
-- the store's RecordQuarantine inserts it, under an ID made from the upload
-- (cdnapi.QuarantineEventID), with ON CONFLICT (id) DO NOTHING, so that a
-- scanner retrying after a crash writes, and queues, one event. 00010's
-- events_queued trigger queues it like any other.
--
-- SQLite cannot change a CHECK constraint in place, so events is rebuilt:
-- its type CHECK admits the new type, status may be NULL (a quarantine has
-- none), and five columns hold the quarantine. subject holds its project.
-- Rows keep their seq, which webhook_jobs refers to. The jobs are set
-- aside while the old table goes and put back once the new one is named
-- events: the DROP's implicit DELETE would break their foreign key, and
-- SQLite counts a deferred breach until the commit even when the rows
-- it missed come back under the same name.

-- +goose Up
-- The triggers that write into events name it, and SQLite's RENAME
-- refuses a schema whose triggers name a table that is gone: they go
-- first and come back, as 00010 made them, after the rename.
DROP TRIGGER region_changed;
DROP TRIGGER incidents_updated;
DROP TRIGGER incidents_resolved;
DROP TRIGGER incidents_opened;
CREATE TABLE events_new (
    seq            INTEGER PRIMARY KEY,
    id             TEXT    NOT NULL UNIQUE,
    type           TEXT    NOT NULL CHECK (type IN
        ('incident.opened', 'incident.updated', 'incident.resolved', 'region.changed', 'file.quarantined')),
    at             INTEGER NOT NULL,
    subject        TEXT    NOT NULL, -- the incident's id, the region's code or the quarantine's project
    component      TEXT,             -- incident.*
    status         TEXT CHECK ((status IS NULL) = (type = 'file.quarantined')), -- the incident's or the region's
    message        TEXT,             -- incident.*: NULL for none
    started_at     INTEGER,          -- incident.*
    resolved_at    INTEGER,          -- incident.*: NULL while open
    name           TEXT,             -- region.changed
    zone           TEXT,
    country        TEXT,
    path           TEXT,             -- file.quarantined
    bytes          INTEGER,
    checksum       TEXT,
    signature      TEXT,
    quarantined_at INTEGER
);
INSERT INTO events_new (seq, id, type, at, subject, component, status, message, started_at, resolved_at, name, zone, country)
    SELECT seq, id, type, at, subject, component, status, message, started_at, resolved_at, name, zone, country FROM events;
CREATE TEMP TABLE webhook_jobs_kept AS SELECT * FROM webhook_jobs;
DELETE FROM webhook_jobs;
DROP TABLE events;
ALTER TABLE events_new RENAME TO events;
INSERT INTO webhook_jobs SELECT * FROM webhook_jobs_kept;
DROP TABLE webhook_jobs_kept;
CREATE INDEX events_by_at ON events (at);
-- Dropped with the old table; as 00010 made it.
-- +goose StatementBegin
CREATE TRIGGER events_queued AFTER INSERT ON events
BEGIN
    INSERT INTO webhook_jobs (webhook_id, event_seq, next_at, queued_at)
    SELECT id, NEW.seq, CAST(unixepoch('subsec') * 1000 AS INTEGER), CAST(unixepoch('subsec') * 1000 AS INTEGER)
    FROM webhooks WHERE instr(events, ',' || NEW.type || ',') > 0;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER incidents_opened AFTER INSERT ON incidents
BEGIN
    INSERT INTO events (id, type, at, subject, component, status, message, started_at, resolved_at)
    VALUES ('evt_' || lower(hex(randomblob(16))), 'incident.opened', unixepoch(),
        NEW.id, NEW.component, NEW.status, NEW.message, NEW.started_at, NEW.resolved_at);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER incidents_resolved AFTER UPDATE ON incidents
WHEN OLD.resolved_at IS NULL AND NEW.resolved_at IS NOT NULL
BEGIN
    INSERT INTO events (id, type, at, subject, component, status, message, started_at, resolved_at)
    VALUES ('evt_' || lower(hex(randomblob(16))), 'incident.resolved', unixepoch(),
        NEW.id, NEW.component, NEW.status, NEW.message, NEW.started_at, NEW.resolved_at);
END;
-- +goose StatementEnd
-- The upsert of UpdateIncident rewrites an open incident every time a
-- process reports it; only a worse status or a new message is news.
-- +goose StatementBegin
CREATE TRIGGER incidents_updated AFTER UPDATE ON incidents
WHEN NEW.resolved_at IS NULL AND (OLD.status IS NOT NEW.status OR OLD.message IS NOT NEW.message)
BEGIN
    INSERT INTO events (id, type, at, subject, component, status, message, started_at, resolved_at)
    VALUES ('evt_' || lower(hex(randomblob(16))), 'incident.updated', unixepoch(),
        NEW.id, NEW.component, NEW.status, NEW.message, NEW.started_at, NEW.resolved_at);
END;
-- +goose StatementEnd
-- A region's changes are recorded in status_changes, whether an operator,
-- ingest or a probe made them (00005).
-- +goose StatementBegin
CREATE TRIGGER region_changed AFTER INSERT ON status_changes
WHEN NEW.kind = 'region'
BEGIN
    INSERT INTO events (id, type, at, subject, status, name, zone, country)
    SELECT 'evt_' || lower(hex(randomblob(16))), 'region.changed', unixepoch(),
        NEW.subject, NEW.status, r.name, r.zone, r.country
    FROM regions r WHERE r.code = NEW.subject;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER region_changed;
DROP TRIGGER incidents_updated;
DROP TRIGGER incidents_resolved;
DROP TRIGGER incidents_opened;
DELETE FROM webhook_jobs WHERE event_seq IN (SELECT seq FROM events WHERE type = 'file.quarantined');
DELETE FROM events WHERE type = 'file.quarantined';
CREATE TABLE events_old (
    seq         INTEGER PRIMARY KEY,
    id          TEXT    NOT NULL UNIQUE,
    type        TEXT    NOT NULL CHECK (type IN
        ('incident.opened', 'incident.updated', 'incident.resolved', 'region.changed')),
    at          INTEGER NOT NULL,
    subject     TEXT    NOT NULL,
    component   TEXT,
    status      TEXT    NOT NULL,
    message     TEXT,
    started_at  INTEGER,
    resolved_at INTEGER,
    name        TEXT,
    zone        TEXT,
    country     TEXT
);
INSERT INTO events_old SELECT seq, id, type, at, subject, component, status, message, started_at, resolved_at, name, zone, country FROM events;
CREATE TEMP TABLE webhook_jobs_kept AS SELECT * FROM webhook_jobs;
DELETE FROM webhook_jobs;
DROP TABLE events;
ALTER TABLE events_old RENAME TO events;
INSERT INTO webhook_jobs SELECT * FROM webhook_jobs_kept;
DROP TABLE webhook_jobs_kept;
CREATE INDEX events_by_at ON events (at);
-- +goose StatementBegin
CREATE TRIGGER events_queued AFTER INSERT ON events
BEGIN
    INSERT INTO webhook_jobs (webhook_id, event_seq, next_at, queued_at)
    SELECT id, NEW.seq, CAST(unixepoch('subsec') * 1000 AS INTEGER), CAST(unixepoch('subsec') * 1000 AS INTEGER)
    FROM webhooks WHERE instr(events, ',' || NEW.type || ',') > 0;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER incidents_opened AFTER INSERT ON incidents
BEGIN
    INSERT INTO events (id, type, at, subject, component, status, message, started_at, resolved_at)
    VALUES ('evt_' || lower(hex(randomblob(16))), 'incident.opened', unixepoch(),
        NEW.id, NEW.component, NEW.status, NEW.message, NEW.started_at, NEW.resolved_at);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER incidents_resolved AFTER UPDATE ON incidents
WHEN OLD.resolved_at IS NULL AND NEW.resolved_at IS NOT NULL
BEGIN
    INSERT INTO events (id, type, at, subject, component, status, message, started_at, resolved_at)
    VALUES ('evt_' || lower(hex(randomblob(16))), 'incident.resolved', unixepoch(),
        NEW.id, NEW.component, NEW.status, NEW.message, NEW.started_at, NEW.resolved_at);
END;
-- +goose StatementEnd
-- The upsert of UpdateIncident rewrites an open incident every time a
-- process reports it; only a worse status or a new message is news.
-- +goose StatementBegin
CREATE TRIGGER incidents_updated AFTER UPDATE ON incidents
WHEN NEW.resolved_at IS NULL AND (OLD.status IS NOT NEW.status OR OLD.message IS NOT NEW.message)
BEGIN
    INSERT INTO events (id, type, at, subject, component, status, message, started_at, resolved_at)
    VALUES ('evt_' || lower(hex(randomblob(16))), 'incident.updated', unixepoch(),
        NEW.id, NEW.component, NEW.status, NEW.message, NEW.started_at, NEW.resolved_at);
END;
-- +goose StatementEnd
-- A region's changes are recorded in status_changes, whether an operator,
-- ingest or a probe made them (00005).
-- +goose StatementBegin
CREATE TRIGGER region_changed AFTER INSERT ON status_changes
WHEN NEW.kind = 'region'
BEGIN
    INSERT INTO events (id, type, at, subject, status, name, zone, country)
    SELECT 'evt_' || lower(hex(randomblob(16))), 'region.changed', unixepoch(),
        NEW.subject, NEW.status, r.name, r.zone, r.country
    FROM regions r WHERE r.code = NEW.subject;
END;
-- +goose StatementEnd
