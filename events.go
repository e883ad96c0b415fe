package cdnapi

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// EventType names what an Event says happened.
type EventType string

// The event types. An incident event carries the incident as the API shows
// it after the change; a region event carries the region with its new
// status; a quarantine event carries the infected upload (Quarantine).
const (
	EventIncidentOpened   EventType = "incident.opened"
	EventIncidentUpdated  EventType = "incident.updated" // a worse status or a new operator message
	EventIncidentResolved EventType = "incident.resolved"
	EventRegionChanged    EventType = "region.changed"
	EventFileQuarantined  EventType = "file.quarantined" // written by QuarantineRecorder, not by a trigger
)

// EventTypes lists every EventType.
var EventTypes = []EventType{EventIncidentOpened, EventIncidentUpdated, EventIncidentResolved, EventRegionChanged,
	EventFileQuarantined}

// Valid reports whether t is one of EventTypes.
func (t EventType) Valid() bool {
	for _, v := range EventTypes {
		if t == v {
			return true
		}
	}
	return false
}

// Event is one change that subscribers are told about. The store writes it
// in the same transaction as the change itself (an outbox), so an event is
// never lost and never told of a change that was rolled back.
//
// Only webhooks are told of events. The Atom feed reads the incidents
// (StatusHistory.ListIncidents) and the live stream the evaluator's status
// document, not this log, so a file.quarantined event, which is no status,
// reaches neither.
type Event struct {
	ID         string // EventIDPrefix and 32 hex digits; the same for every attempt and subscriber
	Type       EventType
	At         time.Time   // when the change was written, whole seconds UTC
	Incident   *Incident   // for incident.*: the incident as it was after the change
	Region     *Region     // for region.changed: the region with its new status
	Quarantine *Quarantine // for file.quarantined: the infected upload
}

// EventIDPrefix starts every event ID.
const EventIDPrefix = "evt_"

// ValidEventID reports whether id has the shape of an event ID:
// EventIDPrefix and 32 lower-case hex digits.
func ValidEventID(id string) bool {
	if len(id) != len(EventIDPrefix)+32 || id[:len(EventIDPrefix)] != EventIDPrefix {
		return false
	}
	return lowerHex(id[len(EventIDPrefix):])
}

// lowerHex reports whether s is lower-case hex digits only.
func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Webhook is a subscription: the events of Events are POSTed to URL, signed
// with Secret as the Standard Webhooks specification says.
type Webhook struct {
	ID        string // WebhookIDPrefix and 22 characters of [A-Za-z0-9]
	URL       string
	Secret    string // WebhookSecretPrefix and base64 of 24 to 64 random bytes
	Events    []EventType
	CreatedAt time.Time
	// PreviousSecret is the secret Secret replaced (RotateWebhookSecret),
	// which signs each delivery too until PreviousUntil: the grace in
	// which receivers move to the new one. "" when there is none.
	PreviousSecret string
	PreviousUntil  time.Time
}

// SigningSecrets returns the secrets that sign a delivery made at now:
// Secret, and PreviousSecret while its grace lasts.
func (w Webhook) SigningSecrets(now time.Time) []string {
	if w.PreviousSecret != "" && now.Before(w.PreviousUntil) {
		return []string{w.Secret, w.PreviousSecret}
	}
	return []string{w.Secret}
}

// Wants reports whether the webhook subscribes to events of type t.
func (w Webhook) Wants(t EventType) bool {
	for _, e := range w.Events {
		if e == t {
			return true
		}
	}
	return false
}

// The prefixes of webhook IDs and secrets. "whsec_" is the one the
// Standard Webhooks libraries strip before they decode a secret.
const (
	WebhookIDPrefix     = "wh_"
	WebhookSecretPrefix = "whsec_"
)

// NewWebhookID returns a fresh random webhook ID.
func NewWebhookID() string {
	return WebhookIDPrefix + NewIncidentID()[len(IncidentIDPrefix):]
}

// NewWebhookSecret returns a fresh secret: the prefix and the base64 of 32
// random bytes.
func NewWebhookSecret() string {
	b := make([]byte, 32)
	rand.Read(b)
	return WebhookSecretPrefix + base64.StdEncoding.EncodeToString(b)
}

// WebhookSecretKey returns the HMAC key of a secret, or an error when the
// secret is not the prefix and the standard base64 of 24 to 64 bytes.
func WebhookSecretKey(secret string) ([]byte, error) {
	enc, ok := strings.CutPrefix(secret, WebhookSecretPrefix)
	if !ok {
		return nil, fmt.Errorf("a webhook secret starts with %q", WebhookSecretPrefix)
	}
	key, err := base64.StdEncoding.DecodeString(enc)
	if err != nil || len(key) < 24 || len(key) > 64 {
		return nil, fmt.Errorf("a webhook secret is %q and the base64 of 24 to 64 bytes", WebhookSecretPrefix)
	}
	return key, nil
}

// ValidateWebhookURL reports why u cannot be a webhook's target: it must be
// an absolute http or https URL with a host and no user information, at
// most 2,000 bytes long. Where it may point is checked when it is dialled.
func ValidateWebhookURL(u string) error {
	if len(u) > 2000 {
		return errors.New("the URL is longer than 2000 bytes")
	}
	p, err := url.Parse(u)
	if err != nil {
		return errors.New("the URL does not parse")
	}
	if p.Scheme != "http" && p.Scheme != "https" {
		return errors.New("the URL must start with http:// or https://")
	}
	if p.Host == "" || p.Hostname() == "" {
		return errors.New("the URL has no host")
	}
	if p.User != nil {
		// It would be sent as Basic credentials and shown by webhooks list.
		return errors.New("the URL must not hold a user or password")
	}
	return nil
}

// Delivery is one event due to one webhook, claimed by a delivering
// process until its lease ends.
type Delivery struct {
	Webhook Webhook
	Event   Event
	Attempt int       // 1 for the first attempt
	Queued  time.Time // when the event was queued for this webhook
}

// DeliveryResult is the outcome of one attempt.
type DeliveryResult string

// The outcomes of an attempt.
const (
	DeliveryDelivered DeliveryResult = "delivered" // a 2xx answer: done
	DeliveryFailed    DeliveryResult = "failed"    // another answer or none: retried later
	DeliveryGone      DeliveryResult = "gone"      // 410: the subscription is removed
	DeliveryGaveUp    DeliveryResult = "gave_up"   // failed, and retried for long enough
)

// DeliveryResults lists the results in the order metrics show them.
var DeliveryResults = []DeliveryResult{DeliveryDelivered, DeliveryFailed, DeliveryGone, DeliveryGaveUp}

// DeliveryAttempt is the record of one attempt, as `webhooks deliveries`
// shows it.
type DeliveryAttempt struct {
	WebhookID  string
	EventID    string
	EventType  EventType
	Attempt    int
	At         time.Time // when the attempt ended
	StatusCode int       // 0: no answer
	Latency    time.Duration
	Error      string // why there was no answer; "" for none. Never the body.
	Result     DeliveryResult
}

// OutboxStats is what the metrics show of the deliveries waiting.
type OutboxStats struct {
	Pending      int       // deliveries not yet done, over every webhook
	OldestQueued time.Time // when the oldest of them was queued; zero when none
}

// WebhookStore keeps the subscriptions and the outbox. Both engines
// implement it; internal/storetest holds the behaviour it must have.
//
// The store writes events itself, in the transaction of the change that
// causes them: an incident opened, made worse or given a message, or
// resolved (StatusHistory.UpdateIncident), and a region's status change,
// however it was written. A file.quarantined event is the one written on
// request (QuarantineRecorder, which both engines implement too). Each
// event is queued at once for every webhook subscribed to its type then.
type WebhookStore interface {
	// AddWebhook stores w. Its ID must be new.
	AddWebhook(ctx context.Context, w Webhook) error
	// Webhooks returns every webhook, oldest first.
	Webhooks(ctx context.Context) ([]Webhook, error)
	// RemoveWebhook removes the webhook and its waiting deliveries, or
	// returns ErrNotFound.
	RemoveWebhook(ctx context.Context, id string) error
	// RotateWebhookSecret makes secret the webhook's Secret, and its
	// Secret until then the PreviousSecret, which signs deliveries too
	// until previousUntil (zero or past: not at all). A rotation within
	// the grace of another replaces it: only the last two secrets sign.
	// It returns ErrNotFound when there is no such webhook.
	RotateWebhookSecret(ctx context.Context, id, secret string, previousUntil time.Time) error

	// ClaimDeliveries claims up to limit deliveries of the webhook that are
	// due, oldest first, counting an attempt for each and making it due
	// again only after lease: a process that dies while it delivers leaves
	// them to the next claim after the lease. Processes sharing the
	// database never claim the same delivery at once.
	ClaimDeliveries(ctx context.Context, webhookID string, limit int, lease time.Duration) ([]Delivery, error)
	// FinishDelivery records the attempt a and acts on its result, in one
	// transaction: delivered and gave_up end the delivery, failed makes it
	// due again after retryIn, gone removes the webhook and its deliveries.
	FinishDelivery(ctx context.Context, d Delivery, a DeliveryAttempt, retryIn time.Duration) error
	// DeliveryAttempts returns up to limit attempts, newest first, of the
	// webhook, or of every webhook when webhookID is "".
	DeliveryAttempts(ctx context.Context, webhookID string, limit int) ([]DeliveryAttempt, error)
	// OutboxStats counts the deliveries waiting.
	OutboxStats(ctx context.Context) (OutboxStats, error)
	// DeleteEventsBefore deletes up to limit events written before cutoff
	// that no delivery waits for, and attempts made before it, and
	// returns how many rows it deleted.
	DeleteEventsBefore(ctx context.Context, cutoff time.Time, limit int) (int, error)
}

// StatusVersion names a status document's content apart from UpdatedAt,
// which moves every evaluation round: 16 hex digits of a SHA-256 digest.
// Two processes, or one before and after a restart, give the same
// statuses the same version, so the live status stream uses it as its
// event ID and the status page as the version it shows.
func StatusVersion(d StatusDocument) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00", d.Status, d.Version, d.Region)
	for _, c := range d.Components {
		fmt.Fprintf(h, "%s\x00%s\x00", c.Name, c.Status)
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}
