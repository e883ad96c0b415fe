package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/cdnapi/cdnapi"
)

var _ cdnapi.WebhookStore = (*Store)(nil)

// Every query here runs on the writer: the webhooks are few, and a claim
// must see its own writes. Each claim runs in one IMMEDIATE transaction, so
// even processes sharing the file never claim a delivery twice; times of
// the outbox are Unix milliseconds from SQLite's clock, which the triggers
// of 00010 use too.

// nowMillis is SQLite's clock in Unix milliseconds.
const nowMillis = `CAST(unixepoch('subsec') * 1000 AS INTEGER)`

// AddWebhook stores w.
func (s *Store) AddWebhook(ctx context.Context, w cdnapi.Webhook) error {
	_, err := s.write.ExecContext(ctx, `INSERT INTO webhooks (id, url, secret, events, created_at)
		VALUES (?, ?, ?, ?, ?)`, w.ID, w.URL, w.Secret, joinEventTypes(w.Events), w.CreatedAt.Unix())
	if err != nil {
		return fmt.Errorf("sqlite: add webhook: %w", err)
	}
	return nil
}

// Webhooks returns every webhook, oldest first.
func (s *Store) Webhooks(ctx context.Context) ([]cdnapi.Webhook, error) {
	rows, err := s.write.QueryContext(ctx, `SELECT id, url, secret, events, created_at, previous_secret, previous_until
		FROM webhooks ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: webhooks: %w", err)
	}
	defer rows.Close()
	var out []cdnapi.Webhook
	for rows.Next() {
		var w cdnapi.Webhook
		var events string
		var created int64
		var previous previousSecret
		if err := rows.Scan(&w.ID, &w.URL, &w.Secret, &events, &created, &previous.secret, &previous.until); err != nil {
			return nil, fmt.Errorf("sqlite: webhooks: %w", err)
		}
		w.Events, w.CreatedAt = splitEventTypes(events), unixTime(created)
		previous.set(&w)
		out = append(out, w)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: webhooks: %w", err)
	}
	return out, nil
}

// RemoveWebhook removes the webhook; its deliveries go with it (ON DELETE
// CASCADE).
func (s *Store) RemoveWebhook(ctx context.Context, id string) error {
	res, err := s.write.ExecContext(ctx, `DELETE FROM webhooks WHERE id = ?`, id)
	if err != nil {
		return fmt.Errorf("sqlite: remove webhook: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return cdnapi.ErrNotFound
	}
	return nil
}

// RotateWebhookSecret makes secret the webhook's, keeping the one it
// replaces until previousUntil.
func (s *Store) RotateWebhookSecret(ctx context.Context, id, secret string, previousUntil time.Time) error {
	var until sql.NullInt64
	if !previousUntil.IsZero() {
		until = sql.NullInt64{Int64: previousUntil.Unix(), Valid: true}
	}
	res, err := s.write.ExecContext(ctx, `UPDATE webhooks SET previous_secret = CASE WHEN ?1 IS NULL THEN NULL ELSE secret END,
		previous_until = ?1, secret = ?2 WHERE id = ?3`, until, secret, id)
	if err != nil {
		return fmt.Errorf("sqlite: rotate webhook secret: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return cdnapi.ErrNotFound
	}
	return nil
}

// previousSecret scans a webhook's previous_secret and previous_until.
type previousSecret struct {
	secret sql.NullString
	until  sql.NullInt64
}

func (p previousSecret) set(w *cdnapi.Webhook) {
	if p.secret.Valid && p.until.Valid {
		w.PreviousSecret, w.PreviousUntil = p.secret.String, unixTime(p.until.Int64)
	}
}

// ClaimDeliveries claims up to limit due deliveries of the webhook.
func (s *Store) ClaimDeliveries(ctx context.Context, webhookID string, limit int, lease time.Duration) ([]cdnapi.Delivery, error) {
	// Most polls find nothing due: a plain read says so without taking the
	// write lock, which ingest and the log followers wait for.
	var due bool
	if err := s.write.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM webhook_jobs
		WHERE webhook_id = ? AND next_at <= `+nowMillis+`)`, webhookID).Scan(&due); err != nil {
		return nil, fmt.Errorf("sqlite: claim deliveries: %w", err)
	}
	if !due {
		return nil, nil
	}
	var out []cdnapi.Delivery
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT w.id, w.url, w.secret, w.events, w.created_at,
			w.previous_secret, w.previous_until, j.attempts, j.queued_at, `+eventColumns+`
			FROM webhook_jobs j JOIN webhooks w ON w.id = j.webhook_id JOIN events e ON e.seq = j.event_seq
			WHERE j.webhook_id = ? AND j.next_at <= `+nowMillis+`
			ORDER BY j.next_at, j.event_seq LIMIT ?`, webhookID, limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		var seqs []int64
		for rows.Next() {
			var d cdnapi.Delivery
			var events string
			var created, queued, seq int64
			ev := eventScan{}
			var previous previousSecret
			dest := append([]any{&d.Webhook.ID, &d.Webhook.URL, &d.Webhook.Secret, &events, &created,
				&previous.secret, &previous.until, &d.Attempt, &queued, &seq}, ev.dest()...)
			if err := rows.Scan(dest...); err != nil {
				return err
			}
			d.Webhook.Events, d.Webhook.CreatedAt = splitEventTypes(events), unixTime(created)
			previous.set(&d.Webhook)
			d.Attempt++
			d.Queued = time.UnixMilli(queued).UTC()
			d.Event = ev.event()
			out = append(out, d)
			seqs = append(seqs, seq)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		rows.Close()
		for _, seq := range seqs {
			if _, err := tx.ExecContext(ctx, `UPDATE webhook_jobs SET attempts = attempts + 1,
				next_at = `+nowMillis+` + ? WHERE webhook_id = ? AND event_seq = ?`,
				lease.Milliseconds(), webhookID, seq); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: claim deliveries: %w", err)
	}
	return out, nil
}

// FinishDelivery records the attempt and acts on its result.
func (s *Store) FinishDelivery(ctx context.Context, d cdnapi.Delivery, a cdnapi.DeliveryAttempt, retryIn time.Duration) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO webhook_attempts
			(webhook_id, event_id, event_type, attempt, at, status_code, latency_us, error, result)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			d.Webhook.ID, d.Event.ID, string(d.Event.Type), a.Attempt, a.At.UnixMilli(), a.StatusCode,
			a.Latency.Microseconds(), a.Error, string(a.Result)); err != nil {
			return err
		}
		var err error
		switch a.Result {
		case cdnapi.DeliveryGone:
			_, err = tx.ExecContext(ctx, `DELETE FROM webhooks WHERE id = ?`, d.Webhook.ID)
		case cdnapi.DeliveryFailed:
			// Only the claim this attempt made: if its lease ran out and
			// another claim counted a later attempt, that one decides.
			_, err = tx.ExecContext(ctx, `UPDATE webhook_jobs SET next_at = `+nowMillis+` + ?
				WHERE webhook_id = ? AND event_seq = (SELECT seq FROM events WHERE id = ?) AND attempts = ?`,
				retryIn.Milliseconds(), d.Webhook.ID, d.Event.ID, d.Attempt)
		default:
			_, err = tx.ExecContext(ctx, `DELETE FROM webhook_jobs
				WHERE webhook_id = ? AND event_seq = (SELECT seq FROM events WHERE id = ?)`, d.Webhook.ID, d.Event.ID)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: finish delivery: %w", err)
	}
	return nil
}

// DeliveryAttempts returns up to limit attempts, newest first.
func (s *Store) DeliveryAttempts(ctx context.Context, webhookID string, limit int) ([]cdnapi.DeliveryAttempt, error) {
	rows, err := s.write.QueryContext(ctx, `SELECT webhook_id, event_id, event_type, attempt, at,
		status_code, latency_us, error, result FROM webhook_attempts
		WHERE ? = '' OR webhook_id = ? ORDER BY seq DESC LIMIT ?`, webhookID, webhookID, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: delivery attempts: %w", err)
	}
	defer rows.Close()
	var out []cdnapi.DeliveryAttempt
	for rows.Next() {
		var a cdnapi.DeliveryAttempt
		var at, latency int64
		if err := rows.Scan(&a.WebhookID, &a.EventID, &a.EventType, &a.Attempt, &at,
			&a.StatusCode, &latency, &a.Error, &a.Result); err != nil {
			return nil, fmt.Errorf("sqlite: delivery attempts: %w", err)
		}
		a.At, a.Latency = time.UnixMilli(at).UTC(), time.Duration(latency)*time.Microsecond
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: delivery attempts: %w", err)
	}
	return out, nil
}

// OutboxStats counts the deliveries waiting.
func (s *Store) OutboxStats(ctx context.Context) (cdnapi.OutboxStats, error) {
	var st cdnapi.OutboxStats
	var oldest sql.NullInt64
	err := s.write.QueryRowContext(ctx, `SELECT count(*), min(queued_at) FROM webhook_jobs`).Scan(&st.Pending, &oldest)
	if err != nil {
		return st, fmt.Errorf("sqlite: outbox stats: %w", err)
	}
	if oldest.Valid {
		st.OldestQueued = time.UnixMilli(oldest.Int64).UTC()
	}
	return st, nil
}

// DeleteEventsBefore deletes up to limit old events that no delivery waits
// for, and then old attempts, in one transaction.
func (s *Store) DeleteEventsBefore(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	var total int64
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM events WHERE seq IN (SELECT seq FROM events e
			WHERE at < ? AND NOT EXISTS (SELECT 1 FROM webhook_jobs j WHERE j.event_seq = e.seq)
			ORDER BY at LIMIT ?)`, cutoff.Unix(), limit)
		if err != nil {
			return err
		}
		total, _ = res.RowsAffected()
		if left := int64(limit) - total; left > 0 {
			res, err = tx.ExecContext(ctx, `DELETE FROM webhook_attempts WHERE seq IN
				(SELECT seq FROM webhook_attempts WHERE at < ? ORDER BY at LIMIT ?)`, cutoff.UnixMilli(), left)
			if err != nil {
				return err
			}
			n, _ := res.RowsAffected()
			total += n
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("sqlite: delete events: %w", err)
	}
	return int(total), nil
}

// eventColumns are the columns of an event that eventScan reads, after
// its seq.
const eventColumns = `e.seq, e.id, e.type, e.at, e.subject, e.component, e.status, e.message,
	e.started_at, e.resolved_at, e.name, e.zone, e.country,
	e.path, e.bytes, e.checksum, e.signature, e.quarantined_at`

// eventScan holds the columns of eventColumns but seq while they are
// scanned.
type eventScan struct {
	id, typ, subject           string
	status, component, message sql.NullString
	name, zone, country        sql.NullString
	path, checksum, signature  sql.NullString
	at                         int64
	started, resolved, bytes   sql.NullInt64
	quarantined                sql.NullInt64
}

func (e *eventScan) dest() []any {
	return []any{&e.id, &e.typ, &e.at, &e.subject, &e.component, &e.status, &e.message,
		&e.started, &e.resolved, &e.name, &e.zone, &e.country,
		&e.path, &e.bytes, &e.checksum, &e.signature, &e.quarantined}
}

func (e *eventScan) event() cdnapi.Event {
	ev := cdnapi.Event{ID: e.id, Type: cdnapi.EventType(e.typ), At: unixTime(e.at)}
	switch ev.Type {
	case cdnapi.EventRegionChanged:
		ev.Region = &cdnapi.Region{Code: e.subject, Name: e.name.String, Zone: e.zone.String,
			Country: e.country.String, Status: cdnapi.Status(e.status.String)}
	case cdnapi.EventFileQuarantined:
		ev.Quarantine = &cdnapi.Quarantine{Project: e.subject, Path: e.path.String, Bytes: e.bytes.Int64,
			Checksum: e.checksum.String, Signature: e.signature.String, At: nullTime(e.quarantined)}
	default:
		ev.Incident = &cdnapi.Incident{ID: e.subject, Component: e.component.String, Status: cdnapi.Status(e.status.String),
			Message: e.message.String, StartedAt: nullTime(e.started), ResolvedAt: nullTime(e.resolved)}
	}
	return ev
}

// joinEventTypes stores types as the triggers match them: each between
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
