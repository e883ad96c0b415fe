-- Events and webhooks (see cdnapi.WebhookStore). Events are written by
-- triggers, in the transaction of the change that causes them, whichever
-- path wrote it: the outbox. Each is queued at once for the webhooks that
-- subscribe to its type; a delivering process claims what is due.

-- +goose Up
-- An event keeps a copy of what it is about, as it was after the change:
-- the payload must not change between attempts, nor vanish when the
-- history is pruned.
CREATE TABLE events (
    seq         INTEGER PRIMARY KEY,
    id          TEXT    NOT NULL UNIQUE,
    type        TEXT    NOT NULL CHECK (type IN
        ('incident.opened', 'incident.updated', 'incident.resolved', 'region.changed')),
    at          INTEGER NOT NULL,
    subject     TEXT    NOT NULL, -- the incident's id or the region's code
    component   TEXT,             -- incident.*
    status      TEXT    NOT NULL, -- the incident's or the region's
    message     TEXT,             -- incident.*: NULL for none
    started_at  INTEGER,          -- incident.*
    resolved_at INTEGER,          -- incident.*: NULL while open
    name        TEXT,             -- region.changed
    zone        TEXT,
    country     TEXT
);
CREATE INDEX events_by_at ON events (at);

CREATE TABLE webhooks (
    id         TEXT    NOT NULL PRIMARY KEY,
    url        TEXT    NOT NULL,
    secret     TEXT    NOT NULL,
    events     TEXT    NOT NULL, -- the types, each between commas: ",incident.opened,region.changed,"
    created_at INTEGER NOT NULL
) WITHOUT ROWID;

-- One row per event not yet delivered to a webhook. next_at (Unix
-- milliseconds) is when it is due: a claim moves it past its lease, a
-- failure to the next retry.
CREATE TABLE webhook_jobs (
    webhook_id TEXT    NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    event_seq  INTEGER NOT NULL REFERENCES events (seq),
    attempts   INTEGER NOT NULL DEFAULT 0,
    next_at    INTEGER NOT NULL,
    queued_at  INTEGER NOT NULL, -- Unix milliseconds
    PRIMARY KEY (webhook_id, event_seq)
);
CREATE INDEX webhook_jobs_due ON webhook_jobs (webhook_id, next_at);
CREATE INDEX webhook_jobs_by_event ON webhook_jobs (event_seq);

-- The log of attempts that `webhooks deliveries` shows. It outlives a
-- removed webhook, so it has no foreign key.
CREATE TABLE webhook_attempts (
    seq         INTEGER PRIMARY KEY,
    webhook_id  TEXT    NOT NULL,
    event_id    TEXT    NOT NULL,
    event_type  TEXT    NOT NULL,
    attempt     INTEGER NOT NULL,
    at          INTEGER NOT NULL, -- Unix milliseconds
    status_code INTEGER NOT NULL, -- 0: no answer
    latency_us  INTEGER NOT NULL,
    error       TEXT    NOT NULL,
    result      TEXT    NOT NULL
);
CREATE INDEX webhook_attempts_by_webhook ON webhook_attempts (webhook_id, seq);
CREATE INDEX webhook_attempts_by_at ON webhook_attempts (at);

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
DROP TRIGGER events_queued;
DROP TABLE webhook_attempts;
DROP TABLE webhook_jobs;
DROP TABLE webhooks;
DROP TABLE events;
