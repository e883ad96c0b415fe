-- Events and webhooks (see cdnapi.WebhookStore). Same meaning as SQLite's
-- 00011: triggers write each event in the transaction of the change that
-- causes it (the outbox) and queue it for the webhooks subscribed to its
-- type. Several processes claim due deliveries with FOR UPDATE SKIP LOCKED
-- and a lease (next_at), so each is sent by one of them.

-- +goose Up
CREATE TABLE events (
    seq         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id          text COLLATE "C" NOT NULL UNIQUE,
    type        text             NOT NULL CHECK (type IN
        ('incident.opened', 'incident.updated', 'incident.resolved', 'region.changed')),
    at          timestamptz(0)   NOT NULL,
    subject     text COLLATE "C" NOT NULL, -- the incident's id or the region's code
    component   text,                      -- incident.*
    status      text             NOT NULL, -- the incident's or the region's
    message     text,                      -- incident.*: NULL for none
    started_at  timestamptz(0),            -- incident.*
    resolved_at timestamptz(0),            -- incident.*: NULL while open
    name        text,                      -- region.changed
    zone        text,
    country     text
);
CREATE INDEX events_by_at ON events (at);

CREATE TABLE webhooks (
    id         text COLLATE "C" NOT NULL PRIMARY KEY,
    url        text             NOT NULL,
    secret     text             NOT NULL,
    events     text             NOT NULL, -- the types, each between commas
    created_at timestamptz(0)   NOT NULL
);

CREATE TABLE webhook_jobs (
    webhook_id text COLLATE "C" NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    event_seq  bigint           NOT NULL REFERENCES events (seq),
    attempts   integer          NOT NULL DEFAULT 0,
    next_at    timestamptz      NOT NULL, -- due from then: a claim moves it past its lease
    queued_at  timestamptz      NOT NULL,
    PRIMARY KEY (webhook_id, event_seq)
);
CREATE INDEX webhook_jobs_due ON webhook_jobs (webhook_id, next_at);
CREATE INDEX webhook_jobs_by_event ON webhook_jobs (event_seq);

CREATE TABLE webhook_attempts (
    seq         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    webhook_id  text COLLATE "C" NOT NULL,
    event_id    text COLLATE "C" NOT NULL,
    event_type  text             NOT NULL,
    attempt     integer          NOT NULL,
    at          timestamptz      NOT NULL,
    status_code integer          NOT NULL, -- 0: no answer
    latency_us  bigint           NOT NULL,
    error       text             NOT NULL,
    result      text             NOT NULL
);
CREATE INDEX webhook_attempts_by_webhook ON webhook_attempts (webhook_id, seq);
CREATE INDEX webhook_attempts_by_at ON webhook_attempts (at);

-- +goose StatementBegin
CREATE FUNCTION queue_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO webhook_jobs (webhook_id, event_seq, next_at, queued_at)
    SELECT id, NEW.seq, clock_timestamp(), clock_timestamp()
    FROM webhooks WHERE position(',' || NEW.type || ',' IN events) > 0;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER events_queued AFTER INSERT ON events
    FOR EACH ROW EXECUTE FUNCTION queue_event();

-- The upsert of UpdateIncident rewrites an open incident every time a
-- process reports it; only a worse status or a new message is news.
-- +goose StatementBegin
CREATE FUNCTION record_incident_event() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    kind text;
BEGIN
    IF TG_OP = 'INSERT' THEN
        kind := 'incident.opened';
    ELSIF OLD.resolved_at IS NULL AND NEW.resolved_at IS NOT NULL THEN
        kind := 'incident.resolved';
    ELSIF NEW.resolved_at IS NULL AND (OLD.status IS DISTINCT FROM NEW.status OR OLD.message IS DISTINCT FROM NEW.message) THEN
        kind := 'incident.updated';
    ELSE
        RETURN NULL;
    END IF;
    INSERT INTO events (id, type, at, subject, component, status, message, started_at, resolved_at)
    VALUES ('evt_' || replace(gen_random_uuid()::text, '-', ''), kind, date_trunc('second', clock_timestamp()),
        NEW.id, NEW.component, NEW.status, NEW.message, NEW.started_at, NEW.resolved_at);
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER incident_events AFTER INSERT OR UPDATE ON incidents
    FOR EACH ROW EXECUTE FUNCTION record_incident_event();

-- +goose StatementBegin
CREATE FUNCTION record_region_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO events (id, type, at, subject, status, name, zone, country)
    SELECT 'evt_' || replace(gen_random_uuid()::text, '-', ''), 'region.changed', date_trunc('second', clock_timestamp()),
        NEW.subject, NEW.status, r.name, r.zone, r.country
    FROM regions r WHERE r.code = NEW.subject;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER region_events AFTER INSERT ON status_changes
    FOR EACH ROW WHEN (NEW.kind = 'region') EXECUTE FUNCTION record_region_event();

-- +goose Down
DROP TRIGGER region_events ON status_changes;
DROP FUNCTION record_region_event();
DROP TRIGGER incident_events ON incidents;
DROP FUNCTION record_incident_event();
DROP TRIGGER events_queued ON events;
DROP FUNCTION queue_event();
DROP TABLE webhook_attempts;
DROP TABLE webhook_jobs;
DROP TABLE webhooks;
DROP TABLE events;
