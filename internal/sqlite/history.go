package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/cdnapi/cdnapi"
)

var _ cdnapi.StatusHistory = (*Store)(nil)

// RecordStatusChange stores one change of a component's status.
func (s *Store) RecordStatusChange(ctx context.Context, c cdnapi.StatusChange) error {
	if c.Subject == "" || !c.Status.Valid() {
		return fmt.Errorf("sqlite: record status change: want a subject and a valid status, have %q and %q", c.Subject, c.Status)
	}
	_, err := s.exec(ctx, `INSERT INTO status_changes (kind, subject, status, source, message, at)
		VALUES (?, ?, ?, ?, ?, ?)`,
		string(c.Kind), c.Subject, string(c.Status), string(c.Source), nullString(c.Message), c.At.Unix())
	if err != nil {
		return fmt.Errorf("sqlite: record status change: %w", err)
	}
	return nil
}

// StatusChanges returns up to limit changes of kind at or after since,
// oldest first.
func (s *Store) StatusChanges(ctx context.Context, kind cdnapi.SubjectKind, since time.Time, limit int) ([]cdnapi.StatusChange, error) {
	rows, err := s.query(ctx, `SELECT kind, subject, status, source, message, at FROM status_changes
		WHERE kind = ? AND at >= ? ORDER BY at, seq LIMIT ?`, string(kind), since.Unix(), limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: status changes: %w", err)
	}
	defer rows.Close()
	var changes []cdnapi.StatusChange
	for rows.Next() {
		var c cdnapi.StatusChange
		var msg sql.NullString
		var at int64
		if err := rows.Scan(&c.Kind, &c.Subject, &c.Status, &c.Source, &msg, &at); err != nil {
			return nil, fmt.Errorf("sqlite: status changes: %w", err)
		}
		c.Message, c.At = msg.String, unixTime(at)
		changes = append(changes, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: status changes: %w", err)
	}
	return changes, nil
}

// UpdateIncident applies u to the component's open incident in one
// statement; see cdnapi.StatusHistory.
func (s *Store) UpdateIncident(ctx context.Context, u cdnapi.IncidentUpdate) error {
	if u.Component == "" || !u.Status.Valid() {
		return fmt.Errorf("sqlite: update incident: want a component and a valid status, have %q and %q", u.Component, u.Status)
	}
	var err error
	if u.Status == cdnapi.StatusOperational {
		_, err = s.exec(ctx,
			`UPDATE incidents SET resolved_at = ?1, updated_at = max(?1, updated_at) WHERE component = ?2 AND resolved_at IS NULL`,
			u.At.Unix(), u.Component)
	} else {
		// updated_at moves exactly when the incidents_updated trigger
		// writes incident.updated: on a worse status or another message.
		_, err = s.exec(ctx, `INSERT INTO incidents (id, component, status, severity, message, started_at, updated_at)
			VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)
			ON CONFLICT (component) WHERE resolved_at IS NULL DO UPDATE SET
				status = CASE WHEN excluded.severity > incidents.severity THEN excluded.status ELSE incidents.status END,
				severity = max(excluded.severity, incidents.severity),
				message = coalesce(excluded.message, incidents.message),
				updated_at = CASE WHEN excluded.severity > incidents.severity
					OR excluded.message IS NOT NULL AND excluded.message IS NOT incidents.message
					THEN max(excluded.updated_at, incidents.updated_at) ELSE incidents.updated_at END`,
			cdnapi.NewIncidentID(), u.Component, string(u.Status), u.Status.Severity(), nullString(u.Message), u.At.Unix())
	}
	if err != nil {
		return fmt.Errorf("sqlite: update incident: %w", err)
	}
	return nil
}

const incidentColumns = `id, component, status, message, started_at, resolved_at, updated_at`

// ListIncidents returns up to q.Limit incidents, newest first, after
// q.After.
func (s *Store) ListIncidents(ctx context.Context, q cdnapi.IncidentQuery) ([]cdnapi.Incident, error) {
	var rows *readRows
	var err error
	if q.After == nil {
		rows, err = s.query(ctx, `SELECT `+incidentColumns+` FROM incidents
			ORDER BY started_at DESC, id DESC LIMIT ?`, max(q.Limit, 0))
	} else {
		rows, err = s.query(ctx, `SELECT `+incidentColumns+` FROM incidents
			WHERE (started_at, id) < (?, ?) ORDER BY started_at DESC, id DESC LIMIT ?`,
			q.After.CreatedAt.Unix(), q.After.ID, max(q.Limit, 0))
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: list incidents: %w", err)
	}
	return scanIncidents(rows)
}

// IncidentsSince returns the incidents open at or after since.
func (s *Store) IncidentsSince(ctx context.Context, since time.Time) ([]cdnapi.Incident, error) {
	rows, err := s.query(ctx, `SELECT `+incidentColumns+` FROM incidents
		WHERE resolved_at IS NULL OR resolved_at >= ?`, since.Unix())
	if err != nil {
		return nil, fmt.Errorf("sqlite: incidents since: %w", err)
	}
	return scanIncidents(rows)
}

func scanIncidents(rows *readRows) ([]cdnapi.Incident, error) {
	defer rows.Close()
	var out []cdnapi.Incident
	for rows.Next() {
		var i cdnapi.Incident
		var msg sql.NullString
		var started int64
		var resolved sql.NullInt64
		var updated int64
		if err := rows.Scan(&i.ID, &i.Component, &i.Status, &msg, &started, &resolved, &updated); err != nil {
			return nil, fmt.Errorf("sqlite: incidents: %w", err)
		}
		i.Message, i.StartedAt, i.UpdatedAt = msg.String, unixTime(started), unixTime(updated)
		if resolved.Valid {
			i.ResolvedAt = unixTime(resolved.Int64)
		}
		out = append(out, i)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: incidents: %w", err)
	}
	return out, nil
}

// DeleteHistoryBefore deletes up to limit status changes made before cutoff
// and incidents resolved before it, oldest first, in one transaction.
func (s *Store) DeleteHistoryBefore(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	var total int64
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM status_changes WHERE seq IN
			(SELECT seq FROM status_changes WHERE at < ? ORDER BY at LIMIT ?)`, cutoff.Unix(), limit)
		if err != nil {
			return err
		}
		n, _ := res.RowsAffected()
		total = n
		if left := int64(limit) - n; left > 0 {
			res, err = tx.ExecContext(ctx, `DELETE FROM incidents WHERE id IN
				(SELECT id FROM incidents WHERE resolved_at < ? ORDER BY resolved_at LIMIT ?)`, cutoff.Unix(), left)
			if err != nil {
				return err
			}
			n, _ = res.RowsAffected()
			total += n
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("sqlite: delete history: %w", err)
	}
	return int(total), nil
}

// nullString stores "" as NULL.
func nullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }
