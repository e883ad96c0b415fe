package storemetrics

import (
	"context"
	"time"

	"github.com/cdnapi/cdnapi"
)

// The API keys and the status history, measured like the rest.

func (s *measured) CreateKey(ctx context.Context, k cdnapi.APIKey) error {
	return s.run(opCreateKey, func() error { return s.inner.CreateKey(ctx, k) })
}

func (s *measured) APIKeys(ctx context.Context, project string) ([]cdnapi.APIKey, error) {
	return measure(s, opAPIKeys, func() ([]cdnapi.APIKey, error) { return s.inner.APIKeys(ctx, project) })
}

func (s *measured) RevokeKey(ctx context.Context, id string, at time.Time) error {
	return s.run(opRevokeKey, func() error { return s.inner.RevokeKey(ctx, id, at) })
}

func (s *measured) TouchKeys(ctx context.Context, used map[string]time.Time) error {
	return s.run(opTouchKeys, func() error { return s.inner.TouchKeys(ctx, used) })
}

func (s *measured) RecordStatusChange(ctx context.Context, c cdnapi.StatusChange) error {
	return s.run(opRecordStatusChange, func() error { return s.inner.RecordStatusChange(ctx, c) })
}

func (s *measured) StatusChanges(ctx context.Context, kind cdnapi.SubjectKind, since time.Time, limit int) ([]cdnapi.StatusChange, error) {
	return measure(s, opStatusChanges, func() ([]cdnapi.StatusChange, error) { return s.inner.StatusChanges(ctx, kind, since, limit) })
}

func (s *measured) UpdateIncident(ctx context.Context, u cdnapi.IncidentUpdate) error {
	return s.run(opUpdateIncident, func() error { return s.inner.UpdateIncident(ctx, u) })
}

func (s *measured) ListIncidents(ctx context.Context, q cdnapi.IncidentQuery) ([]cdnapi.Incident, error) {
	return measure(s, opListIncidents, func() ([]cdnapi.Incident, error) { return s.inner.ListIncidents(ctx, q) })
}

func (s *measured) IncidentsSince(ctx context.Context, since time.Time) ([]cdnapi.Incident, error) {
	return measure(s, opIncidentsSince, func() ([]cdnapi.Incident, error) { return s.inner.IncidentsSince(ctx, since) })
}

func (s *measured) DeleteHistoryBefore(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	n, err := measure(s, opDeleteHistoryBefore, func() (int, error) { return s.inner.DeleteHistoryBefore(ctx, cutoff, limit) })
	s.m.deleted.WithLabelValues(s.engine, "status_history").Add(float64(n))
	return n, err
}
