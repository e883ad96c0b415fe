-- The status history: every change of a component's or a region's status,
-- and the incidents derived from the components' changes (see
-- cdnapi.StatusHistory). Both are pruned after 90 days, the longest uptime
-- window.

-- +goose Up
-- The operator's message travels with the override to its incident.
ALTER TABLE component_overrides ADD COLUMN message TEXT NOT NULL DEFAULT '';

-- A rowid table: rows arrive in time order, and seq keeps the order of two
-- changes within one second.
CREATE TABLE status_changes (
    seq     INTEGER PRIMARY KEY,
    kind    TEXT    NOT NULL CHECK (kind IN ('component', 'region')),
    subject TEXT    NOT NULL,
    status  TEXT    NOT NULL CHECK (status IN
        ('operational', 'degraded_performance', 'partial_outage', 'major_outage', 'under_maintenance')),
    source  TEXT    NOT NULL CHECK (source IN ('probe', 'operator')),
    message TEXT,             -- NULL: none
    at      INTEGER NOT NULL
);
CREATE INDEX status_changes_by_kind_at ON status_changes (kind, at);
CREATE INDEX status_changes_by_at ON status_changes (at);

CREATE TABLE incidents (
    id          TEXT    NOT NULL PRIMARY KEY,
    component   TEXT    NOT NULL,
    status      TEXT    NOT NULL CHECK (status IN
        ('operational', 'degraded_performance', 'partial_outage', 'major_outage', 'under_maintenance')),
    severity    INTEGER NOT NULL, -- the rank of status, so that one statement keeps the worst
    message     TEXT,             -- NULL: none
    started_at  INTEGER NOT NULL,
    resolved_at INTEGER           -- NULL: open
) WITHOUT ROWID;
-- At most one open incident per component: UpdateIncident upserts on it.
CREATE UNIQUE INDEX incidents_open ON incidents (component) WHERE resolved_at IS NULL;
-- The keyset index of GET /api/v1/status/incidents, newest first.
CREATE INDEX incidents_by_started ON incidents (started_at DESC, id DESC);
CREATE INDEX incidents_by_resolved ON incidents (resolved_at);

-- A region's status is written by `regions set-status` and by ingest; the
-- triggers record every change, whichever path wrote it.
-- +goose StatementBegin
CREATE TRIGGER regions_status_inserted AFTER INSERT ON regions
BEGIN
    INSERT INTO status_changes (kind, subject, status, source, at)
    VALUES ('region', NEW.code, NEW.status, 'operator', unixepoch());
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER regions_status_updated AFTER UPDATE OF status ON regions
WHEN OLD.status IS NOT NEW.status
BEGIN
    INSERT INTO status_changes (kind, subject, status, source, at)
    VALUES ('region', NEW.code, NEW.status, 'operator', unixepoch());
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER regions_status_updated;
DROP TRIGGER regions_status_inserted;
DROP TABLE incidents;
DROP TABLE status_changes;
ALTER TABLE component_overrides DROP COLUMN message;
