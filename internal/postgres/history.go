package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

var _ cdnapi.StatusHistory = (*Store)(nil)

// Writes go to the primary. Reads go to the read replica, like the lists
// (and to the primary while it does not answer): the status page shows
// history while either server is down.

// RecordStatusChange stores one change of a component's status.
func (s *Store) RecordStatusChange(ctx context.Context, c cdnapi.StatusChange) error {
	if c.Subject == "" || !c.Status.Valid() {
		return fmt.Errorf("postgres: record status change: want a subject and a valid status, have %q and %q", c.Subject, c.Status)
	}
	_, err := s.primary.Exec(ctx, `INSERT INTO status_changes (kind, subject, status, source, message, at)
		VALUES ($1, $2, $3, $4, $5, $6)`,
		string(c.Kind), c.Subject, string(c.Status), string(c.Source), nullString(c.Message), wholeSecondUTC(c.At))
	if err != nil {
		return fmt.Errorf("postgres: record status change: %w", err)
	}
	return nil
}

// StatusChanges returns up to limit changes of kind at or after since,
// oldest first.
func (s *Store) StatusChanges(ctx context.Context, kind cdnapi.SubjectKind, since time.Time, limit int) ([]cdnapi.StatusChange, error) {
	var changes []cdnapi.StatusChange
	err := s.reading(ctx, func(db *pgxpool.Pool) error {
		rows, err := db.Query(ctx, `SELECT kind, subject, status, source, message, at FROM status_changes
			WHERE kind = $1 AND at >= $2 ORDER BY at, seq LIMIT $3`, string(kind), secondBefore(since), limit)
		if err != nil {
			return err
		}
		changes, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (cdnapi.StatusChange, error) {
			var c cdnapi.StatusChange
			var msg *string
			err := row.Scan(&c.Kind, &c.Subject, &c.Status, &c.Source, &msg, &c.At)
			c.Message, c.At = deref(msg), c.At.UTC()
			return c, err
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: status changes: %w", err)
	}
	return changes, nil
}

// UpdateIncident applies u to the component's open incident in one
// statement; see cdnapi.StatusHistory. The upsert on the partial unique
// index makes concurrent updates from several processes agree.
func (s *Store) UpdateIncident(ctx context.Context, u cdnapi.IncidentUpdate) error {
	if u.Component == "" || !u.Status.Valid() {
		return fmt.Errorf("postgres: update incident: want a component and a valid status, have %q and %q", u.Component, u.Status)
	}
	var err error
	if u.Status == cdnapi.StatusOperational {
		_, err = s.primary.Exec(ctx,
			`UPDATE incidents SET resolved_at = $1, updated_at = greatest($1, updated_at) WHERE component = $2 AND resolved_at IS NULL`,
			wholeSecondUTC(u.At), u.Component)
	} else {
		// updated_at moves exactly when the incidents_updated trigger
		// writes incident.updated: on a worse status or another message.
		_, err = s.primary.Exec(ctx, `INSERT INTO incidents (id, component, status, severity, message, started_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $6)
			ON CONFLICT (component) WHERE resolved_at IS NULL DO UPDATE SET
				status = CASE WHEN excluded.severity > incidents.severity THEN excluded.status ELSE incidents.status END,
				severity = greatest(excluded.severity, incidents.severity),
				message = coalesce(excluded.message, incidents.message),
				updated_at = CASE WHEN excluded.severity > incidents.severity
					OR excluded.message IS DISTINCT FROM incidents.message AND excluded.message IS NOT NULL
					THEN greatest(excluded.updated_at, incidents.updated_at) ELSE incidents.updated_at END`,
			cdnapi.NewIncidentID(), u.Component, string(u.Status), u.Status.Severity(), nullString(u.Message), wholeSecondUTC(u.At))
	}
	if err != nil {
		return fmt.Errorf("postgres: update incident: %w", err)
	}
	return nil
}

const incidentColumns = `id, component, status, message, started_at, resolved_at, updated_at`

// ListIncidents returns up to q.Limit incidents, newest first, after
// q.After: a range scan of incidents_by_started.
func (s *Store) ListIncidents(ctx context.Context, q cdnapi.IncidentQuery) ([]cdnapi.Incident, error) {
	if q.Limit < 1 {
		return nil, fmt.Errorf("postgres: list incidents: limit %d is below 1", q.Limit)
	}
	var out []cdnapi.Incident
	err := s.reading(ctx, func(db *pgxpool.Pool) error {
		var rows pgx.Rows
		var err error
		if q.After == nil {
			rows, err = db.Query(ctx, `SELECT `+incidentColumns+` FROM incidents
				ORDER BY started_at DESC, id DESC LIMIT $1`, q.Limit)
		} else {
			rows, err = db.Query(ctx, `SELECT `+incidentColumns+` FROM incidents
				WHERE (started_at, id) < ($1, $2) ORDER BY started_at DESC, id DESC LIMIT $3`,
				wholeSecondUTC(q.After.CreatedAt), q.After.ID, q.Limit)
		}
		if err != nil {
			return err
		}
		out, err = collectIncidents(rows)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: list incidents: %w", err)
	}
	return out, nil
}

// IncidentsSince returns the incidents open at or after since.
func (s *Store) IncidentsSince(ctx context.Context, since time.Time) ([]cdnapi.Incident, error) {
	var out []cdnapi.Incident
	err := s.reading(ctx, func(db *pgxpool.Pool) error {
		rows, err := db.Query(ctx, `SELECT `+incidentColumns+` FROM incidents
			WHERE resolved_at IS NULL OR resolved_at >= $1`, secondBefore(since))
		if err != nil {
			return err
		}
		out, err = collectIncidents(rows)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: incidents since: %w", err)
	}
	return out, nil
}

func collectIncidents(rows pgx.Rows) ([]cdnapi.Incident, error) {
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (cdnapi.Incident, error) {
		var i cdnapi.Incident
		var msg *string
		var resolved *time.Time
		err := row.Scan(&i.ID, &i.Component, &i.Status, &msg, &i.StartedAt, &resolved, &i.UpdatedAt)
		i.Message, i.StartedAt, i.UpdatedAt = deref(msg), i.StartedAt.UTC(), i.UpdatedAt.UTC()
		if resolved != nil {
			i.ResolvedAt = resolved.UTC()
		}
		return i, err
	})
}

// DeleteHistoryBefore deletes up to limit status changes made before cutoff
// and incidents resolved before it, oldest first, in one transaction.
func (s *Store) DeleteHistoryBefore(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	if limit < 1 {
		return 0, fmt.Errorf("postgres: delete history: limit %d is below 1", limit)
	}
	cut := secondBefore(cutoff)
	var total int64
	err := pgx.BeginFunc(ctx, s.primary, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM status_changes WHERE seq IN
			(SELECT seq FROM status_changes WHERE at < $1 ORDER BY at LIMIT $2)`, cut, limit)
		if err != nil {
			return err
		}
		total = tag.RowsAffected()
		if left := int64(limit) - total; left > 0 {
			tag, err = tx.Exec(ctx, `DELETE FROM incidents WHERE id IN
				(SELECT id FROM incidents WHERE resolved_at < $1 ORDER BY resolved_at LIMIT $2)`, cut, left)
			if err != nil {
				return err
			}
			total += tag.RowsAffected()
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("postgres: delete history: %w", err)
	}
	return int(total), nil
}

// nullString stores "" as NULL.
func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
