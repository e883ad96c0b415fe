package cdnapi

import (
	"context"
	"crypto/rand"
	"time"
)

// SubjectKind says what a StatusChange is about.
type SubjectKind string

// The subjects whose status changes are recorded.
const (
	SubjectComponent SubjectKind = "component"
	SubjectRegion    SubjectKind = "region"
)

// ChangeSource says who changed a status.
type ChangeSource string

// The sources of a StatusChange: a probe of the evaluator, or an operator
// (a component override set with the CLI, a region's status set by hand or
// by ingest).
const (
	SourceProbe    ChangeSource = "probe"
	SourceOperator ChangeSource = "operator"
)

// StatusChange is one change of the status of a component or a region.
type StatusChange struct {
	Kind    SubjectKind
	Subject string // the component's name or the region's code
	Status  Status // the status from At on
	Source  ChangeSource
	Message string    // the operator's message; "" for none
	At      time.Time // stored as whole seconds, UTC
}

// Incident is a spell during which a component was not operational.
type Incident struct {
	ID        string // IncidentIDPrefix followed by 1–64 of [A-Za-z0-9]
	Component string
	Status    Status // the worst status reached while it was open
	Message   string // the last operator message given while it was open; "" for none
	StartedAt time.Time
	// ResolvedAt is when the component was operational again; zero while
	// the incident is open.
	ResolvedAt time.Time
	// UpdatedAt is the incident's last change: when it opened, reached a
	// worse status, took another message or resolved. It moves with the
	// incident.opened, incident.updated and incident.resolved events.
	UpdatedAt time.Time
}

// Open reports whether the incident has not been resolved.
func (i Incident) Open() bool { return i.ResolvedAt.IsZero() }

// IncidentIDPrefix starts every incident ID.
const IncidentIDPrefix = "inc_"

// IncidentUpdate is what the evaluator tells the store about a component's
// incident: at At, the component is in Status.
type IncidentUpdate struct {
	Component string
	Status    Status
	Message   string // the operator's message, if any
	At        time.Time
}

// IncidentQuery selects a page of incidents, newest first: by started_at
// DESC, then id DESC.
type IncidentQuery struct {
	After *Position // CreatedAt is the incident's StartedAt; nil starts at the newest
	Limit int       // the most rows to return; at least 1
}

// StatusHistory is the store of status changes and incidents. Both engines
// implement it; internal/storetest holds the behaviour it must have.
type StatusHistory interface {
	// RecordStatusChange stores one change of a component's status. Region
	// changes are recorded by the store itself, whichever way the status is
	// written.
	RecordStatusChange(ctx context.Context, c StatusChange) error
	// StatusChanges returns up to limit changes of kind at or after since,
	// oldest first.
	StatusChanges(ctx context.Context, kind SubjectKind, since time.Time, limit int) ([]StatusChange, error)

	// UpdateIncident applies u to the component's open incident, in one
	// statement, so that processes sharing the database agree: a status
	// other than operational opens an incident when none is open (started at
	// u.At) or raises the open one's status to the worse of the two and
	// takes u's message when it has one; operational resolves the open
	// incident at u.At, and does nothing when none is open. There is at most
	// one open incident per component.
	UpdateIncident(ctx context.Context, u IncidentUpdate) error
	// ListIncidents returns up to q.Limit incidents, newest first.
	ListIncidents(ctx context.Context, q IncidentQuery) ([]Incident, error)
	// IncidentsSince returns every incident open at or after since: the
	// open ones and those resolved at or after since, in no set order.
	IncidentsSince(ctx context.Context, since time.Time) ([]Incident, error)

	// DeleteHistoryBefore deletes up to limit status changes made before
	// cutoff and incidents resolved before it, in one short transaction,
	// and returns how many rows it deleted.
	DeleteHistoryBefore(ctx context.Context, cutoff time.Time, limit int) (int, error)
}

// Severity ranks s from 0 (operational) up, in the order of Statuses; an
// unknown value ranks above every known one.
func (s Status) Severity() int { return s.severity() }

// NewIncidentID returns a fresh random incident ID: the prefix and 22
// characters of [A-Za-z0-9], about 131 bits.
func NewIncidentID() string {
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	b := []byte(IncidentIDPrefix + "0000000000000000000000")
	r := make([]byte, len(b)-len(IncidentIDPrefix))
	rand.Read(r)
	for i, v := range r {
		// 256 is not a multiple of 62; the bias of the modulo is a few
		// percent on some characters, harmless for an identifier.
		b[len(IncidentIDPrefix)+i] = alphabet[int(v)%len(alphabet)]
	}
	return string(b)
}
