package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/jackc/pgx/v5"
)

var _ cdnapi.WebhookStore = (*Store)(nil)

// Everything here runs on the primary: a claim must see the latest
// deliveries, and the replica may lag. The outbox's times come from the
// server's clock, which the triggers of 00007 use too, so processes with
// skewed clocks still agree on what is due.

// AddWebhook stores w.
func (s *Store) AddWebhook(ctx context.Context, w cdnapi.Webhook) error {
	_, err := s.primary.Exec(ctx, `INSERT INTO webhooks (id, url, secret, events, created_at)
		VALUES ($1, $2, $3, $4, $5)`, w.ID, w.URL, w.Secret, joinEventTypes(w.Events), wholeSecondUTC(w.CreatedAt))
	if err != nil {
		return fmt.Errorf("postgres: add webhook: %w", err)
	}
	return nil
}

// Webhooks returns every webhook, oldest first.
func (s *Store) Webhooks(ctx context.Context) ([]cdnapi.Webhook, error) {
	rows, err := s.primary.Query(ctx, `SELECT id, url, secret, events, created_at, previous_secret, previous_until
		FROM webhooks ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("postgres: webhooks: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (cdnapi.Webhook, error) {
		var w cdnapi.Webhook
		var events string
		var previous previousSecret
		err := row.Scan(&w.ID, &w.URL, &w.Secret, &events, &w.CreatedAt, &previous.secret, &previous.until)
		w.Events, w.CreatedAt = splitEventTypes(events), w.CreatedAt.UTC()
		previous.set(&w)
		return w, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: webhooks: %w", err)
	}
	return out, nil
}

// RemoveWebhook removes the webhook; its deliveries go with it (ON DELETE
// CASCADE).
func (s *Store) RemoveWebhook(ctx context.Context, id string) error {
	tag, err := s.primary.Exec(ctx, `DELETE FROM webhooks WHERE id = $1`, id)
	if err != nil {
		return fmt.Errorf("postgres: remove webhook: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return cdnapi.ErrNotFound
	}
	return nil
}

// RotateWebhookSecret makes secret the webhook's, keeping the one it
// replaces until previousUntil.
func (s *Store) RotateWebhookSecret(ctx context.Context, id, secret string, previousUntil time.Time) error {
	var until *time.Time
	if !previousUntil.IsZero() {
		t := wholeSecondUTC(previousUntil)
		until = &t
	}
	tag, err := s.primary.Exec(ctx, `UPDATE webhooks SET previous_secret = CASE WHEN $1::timestamptz IS NULL THEN NULL ELSE secret END,
		previous_until = $1, secret = $2 WHERE id = $3`, until, secret, id)
	if err != nil {
		return fmt.Errorf("postgres: rotate webhook secret: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return cdnapi.ErrNotFound
	}
	return nil
}

// previousSecret scans a webhook's previous_secret and previous_until.
type previousSecret struct {
	secret *string
	until  *time.Time
}

func (p previousSecret) set(w *cdnapi.Webhook) {
	if p.secret != nil && p.until != nil {
		w.PreviousSecret, w.PreviousUntil = *p.secret, p.until.UTC()
	}
}

// ClaimDeliveries claims up to limit due deliveries of the webhook in one
// statement. FOR UPDATE SKIP LOCKED passes over the rows another process
// is claiming at that moment, and the lease (next_at) keeps the claimed
// ones from every other claim until it ends.
func (s *Store) ClaimDeliveries(ctx context.Context, webhookID string, limit int, lease time.Duration) ([]cdnapi.Delivery, error) {
	rows, err := s.primary.Query(ctx, `WITH due AS (
			SELECT webhook_id, event_seq FROM webhook_jobs
			WHERE webhook_id = $1 AND next_at <= clock_timestamp()
			ORDER BY next_at, event_seq LIMIT $2
			FOR UPDATE SKIP LOCKED)
		UPDATE webhook_jobs j SET attempts = j.attempts + 1, next_at = clock_timestamp() + $3 * interval '1 millisecond'
		FROM due, webhooks w, events e
		WHERE j.webhook_id = due.webhook_id AND j.event_seq = due.event_seq
			AND w.id = j.webhook_id AND e.seq = j.event_seq
		RETURNING w.id, w.url, w.secret, w.events, w.created_at, w.previous_secret, w.previous_until, j.attempts, j.queued_at, `+eventColumns,
		webhookID, limit, lease.Milliseconds())
	if err != nil {
		return nil, fmt.Errorf("postgres: claim deliveries: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (cdnapi.Delivery, error) {
		var d cdnapi.Delivery
		var events string
		var ev eventScan
		var previous previousSecret
		err := row.Scan(append([]any{&d.Webhook.ID, &d.Webhook.URL, &d.Webhook.Secret, &events,
			&d.Webhook.CreatedAt, &previous.secret, &previous.until, &d.Attempt, &d.Queued}, ev.dest()...)...)
		d.Webhook.Events, d.Webhook.CreatedAt, d.Queued = splitEventTypes(events), d.Webhook.CreatedAt.UTC(), d.Queued.UTC()
		previous.set(&d.Webhook)
		d.Event = ev.event()
		return d, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: claim deliveries: %w", err)
	}
	// RETURNING gives no order; oldest first is what callers expect.
	slices.SortFunc(out, func(a, b cdnapi.Delivery) int { return a.Queued.Compare(b.Queued) })
	return out, nil
}

// FinishDelivery records the attempt and acts on its result.
func (s *Store) FinishDelivery(ctx context.Context, d cdnapi.Delivery, a cdnapi.DeliveryAttempt, retryIn time.Duration) error {
	err := pgx.BeginFunc(ctx, s.primary, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO webhook_attempts
			(webhook_id, event_id, event_type, attempt, at, status_code, latency_us, error, result)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			d.Webhook.ID, d.Event.ID, string(d.Event.Type), a.Attempt, a.At.UTC(), a.StatusCode,
			a.Latency.Microseconds(), a.Error, string(a.Result)); err != nil {
			return err
		}
		var err error
		switch a.Result {
		case cdnapi.DeliveryGone:
			_, err = tx.Exec(ctx, `DELETE FROM webhooks WHERE id = $1`, d.Webhook.ID)
		case cdnapi.DeliveryFailed:
			// Only the claim this attempt made: if its lease ran out and
			// another claim counted a later attempt, that one decides.
			_, err = tx.Exec(ctx, `UPDATE webhook_jobs SET next_at = clock_timestamp() + $1 * interval '1 millisecond'
				WHERE webhook_id = $2 AND event_seq = (SELECT seq FROM events WHERE id = $3) AND attempts = $4`,
				retryIn.Milliseconds(), d.Webhook.ID, d.Event.ID, d.Attempt)
		default:
			_, err = tx.Exec(ctx, `DELETE FROM webhook_jobs
				WHERE webhook_id = $1 AND event_seq = (SELECT seq FROM events WHERE id = $2)`, d.Webhook.ID, d.Event.ID)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: finish delivery: %w", err)
	}
	return nil
}

// DeliveryAttempts returns up to limit attempts, newest first.
func (s *Store) DeliveryAttempts(ctx context.Context, webhookID string, limit int) ([]cdnapi.DeliveryAttempt, error) {
	rows, err := s.primary.Query(ctx, `SELECT webhook_id, event_id, event_type, attempt, at,
		status_code, latency_us, error, result FROM webhook_attempts
		WHERE $1 = '' OR webhook_id = $1 ORDER BY seq DESC LIMIT $2`, webhookID, limit)
	if err != nil {
		return nil, fmt.Errorf("postgres: delivery attempts: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (cdnapi.DeliveryAttempt, error) {
		var a cdnapi.DeliveryAttempt
		var latency int64
		err := row.Scan(&a.WebhookID, &a.EventID, &a.EventType, &a.Attempt, &a.At,
			&a.StatusCode, &latency, &a.Error, &a.Result)
		a.At, a.Latency = a.At.UTC(), time.Duration(latency)*time.Microsecond
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: delivery attempts: %w", err)
	}
	return out, nil
}

// OutboxStats counts the deliveries waiting.
func (s *Store) OutboxStats(ctx context.Context) (cdnapi.OutboxStats, error) {
	var st cdnapi.OutboxStats
	var oldest *time.Time
	err := s.primary.QueryRow(ctx, `SELECT count(*), min(queued_at) FROM webhook_jobs`).Scan(&st.Pending, &oldest)
	if err != nil {
		return st, fmt.Errorf("postgres: outbox stats: %w", err)
	}
	if oldest != nil {
		st.OldestQueued = oldest.UTC()
	}
	return st, nil
}

// DeleteEventsBefore deletes up to limit old events that no delivery waits
// for, and then old attempts, in one transaction.
func (s *Store) DeleteEventsBefore(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	var total int64
	err := pgx.BeginFunc(ctx, s.primary, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM events WHERE seq IN (SELECT seq FROM events e
			WHERE at < $1 AND NOT EXISTS (SELECT 1 FROM webhook_jobs j WHERE j.event_seq = e.seq)
			ORDER BY at LIMIT $2)`, cutoff.UTC(), limit)
		if err != nil {
			return err
		}
		total = tag.RowsAffected()
		if left := int64(limit) - total; left > 0 {
			tag, err = tx.Exec(ctx, `DELETE FROM webhook_attempts WHERE seq IN
				(SELECT seq FROM webhook_attempts WHERE at < $1 ORDER BY at LIMIT $2)`, cutoff.UTC(), left)
			if err != nil {
				return err
			}
			total += tag.RowsAffected()
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("postgres: delete events: %w", err)
	}
	return int(total), nil
}

// eventColumns are the columns of an event that eventScan reads.
const eventColumns = `e.id, e.type, e.at, e.subject, e.component, e.status, e.message,
	e.started_at, e.resolved_at, e.name, e.zone, e.country,
	e.path, e.bytes, e.checksum, e.signature, e.quarantined_at`

// eventScan holds the columns of eventColumns while they are scanned.
type eventScan struct {
	id, typ, subject           string
	status, component, message *string
	name, zone, country        *string
	path, checksum, signature  *string
	bytes                      *int64
	at                         time.Time
	started, resolved          *time.Time
	quarantined                *time.Time
}

func (e *eventScan) dest() []any {
	return []any{&e.id, &e.typ, &e.at, &e.subject, &e.component, &e.status, &e.message,
		&e.started, &e.resolved, &e.name, &e.zone, &e.country,
		&e.path, &e.bytes, &e.checksum, &e.signature, &e.quarantined}
}

func (e *eventScan) event() cdnapi.Event {
	ev := cdnapi.Event{ID: e.id, Type: cdnapi.EventType(e.typ), At: e.at.UTC()}
	switch ev.Type {
	case cdnapi.EventRegionChanged:
		ev.Region = &cdnapi.Region{Code: e.subject, Name: deref(e.name), Zone: deref(e.zone),
			Country: deref(e.country), Status: cdnapi.Status(deref(e.status))}
	case cdnapi.EventFileQuarantined:
		q := &cdnapi.Quarantine{Project: e.subject, Path: deref(e.path), Checksum: deref(e.checksum),
			Signature: deref(e.signature)}
		if e.bytes != nil {
			q.Bytes = *e.bytes
		}
		if e.quarantined != nil {
			q.At = e.quarantined.UTC()
		}
		ev.Quarantine = q
	default:
		ev.Incident = &cdnapi.Incident{ID: e.subject, Component: deref(e.component), Status: cdnapi.Status(deref(e.status)),
			Message: deref(e.message)}
		if e.started != nil {
			ev.Incident.StartedAt = e.started.UTC()
		}
		if e.resolved != nil {
			ev.Incident.ResolvedAt = e.resolved.UTC()
		}
	}
	return ev
}

// joinEventTypes stores types as the trigger matches them: each between
// commas.
func joinEventTypes(types []cdnapi.EventType) string {
	var b strings.Builder
	b.WriteByte(',')
	for _, t := range types {
		b.WriteString(string(t))
		b.WriteByte(',')
	}
	return b.String()
}

func splitEventTypes(s string) []cdnapi.EventType {
	var out []cdnapi.EventType
	for _, t := range strings.Split(strings.Trim(s, ","), ",") {
		if t != "" {
			out = append(out, cdnapi.EventType(t))
		}
	}
	return out
}
