-- The status history: every change of a component's or a region's status,
-- and the incidents derived from the components' changes (see
-- cdnapi.StatusHistory). Both are pruned after 90 days, the longest uptime
-- window. Same meaning as SQLite's 00005.

-- +goose Up
-- The operator's message travels with the override to its incident.
ALTER TABLE component_overrides ADD COLUMN message text NOT NULL DEFAULT '';

CREATE TABLE status_changes (
    seq     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, -- order within one second
    kind    text             NOT NULL CHECK (kind IN ('component', 'region')),
    subject text COLLATE "C" NOT NULL,
    status  text             NOT NULL CHECK (status IN
        ('operational', 'degraded_performance', 'partial_outage', 'major_outage', 'under_maintenance')),
    source  text             NOT NULL CHECK (source IN ('probe', 'operator')),
    message text,                        -- NULL: none
    at      timestamptz(0)   NOT NULL
);
CREATE INDEX status_changes_by_kind_at ON status_changes (kind, at);
CREATE INDEX status_changes_by_at ON status_changes (at);

CREATE TABLE incidents (
    id          text COLLATE "C" NOT NULL PRIMARY KEY,
    component   text COLLATE "C" NOT NULL,
    status      text             NOT NULL CHECK (status IN
        ('operational', 'degraded_performance', 'partial_outage', 'major_outage', 'under_maintenance')),
    severity    smallint         NOT NULL, -- the rank of status, so that one statement keeps the worst
    message     text,                      -- NULL: none
    started_at  timestamptz(0)   NOT NULL,
    resolved_at timestamptz(0)             -- NULL: open
);
-- At most one open incident per component: UpdateIncident upserts on it,
-- so processes sharing the database never open two.
CREATE UNIQUE INDEX incidents_open ON incidents (component) WHERE resolved_at IS NULL;
-- The keyset index of GET /api/v1/status/incidents, newest first.
CREATE INDEX incidents_by_started ON incidents (started_at DESC, id DESC);
CREATE INDEX incidents_by_resolved ON incidents (resolved_at);

-- A region's status is written by `regions set-status` and by ingest; the
-- trigger records every change, whichever path wrote it.
-- +goose StatementBegin
CREATE FUNCTION record_region_status() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' OR OLD.status IS DISTINCT FROM NEW.status THEN
        INSERT INTO status_changes (kind, subject, status, source, at)
        VALUES ('region', NEW.code, NEW.status, 'operator', date_trunc('second', clock_timestamp()));
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER regions_status_changes AFTER INSERT OR UPDATE OF status ON regions
    FOR EACH ROW EXECUTE FUNCTION record_region_status();

-- +goose Down
DROP TRIGGER regions_status_changes ON regions;
DROP FUNCTION record_region_status();
DROP TABLE incidents;
DROP TABLE status_changes;
ALTER TABLE component_overrides DROP COLUMN message;
