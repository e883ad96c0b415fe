// Package webhook delivers the store's events to the webhooks operators
// subscribed, as the Standard Webhooks specification says: signed POSTs,
// retried with exponential backoff and jitter until a 2xx answer, a 410
// (which removes the subscription) or RetryFor has passed.
//
// The events themselves are written by the store, in the transaction of
// the change that causes them (see cdnapi.WebhookStore), so a Deliverer
// only claims what is due, sends it and records the outcome. Claims carry
// a lease: a process that dies while it sends leaves the delivery to the
// next claim after the lease, by itself or another process. Delivery is
// therefore at least once; receivers deduplicate by the webhook-id header.
package webhook

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cdnapi/cdnapi"
)

// The defaults of Config.
const (
	DefaultTimeout     = 10 * time.Second
	DefaultConcurrency = 4
	DefaultPoll        = time.Second
	DefaultRetryMin    = 5 * time.Second
	DefaultRetryMax    = time.Hour
	DefaultRetryFor    = 72 * time.Hour
	// EventRetention is how long events and the log of attempts are kept
	// once nothing waits for them.
	EventRetention = 30 * 24 * time.Hour
)

// finishTimeout bounds the write of an attempt's outcome.
const finishTimeout = 5 * time.Second

// Config configures a Deliverer. Zero fields take their defaults.
type Config struct {
	// Timeout bounds one attempt, from dialling to the end of the answer's
	// headers and the first 4 KiB of its body. DefaultTimeout.
	Timeout time.Duration
	// Concurrency is the most attempts in flight to one webhook at once,
	// so a slow receiver holds up only its own deliveries.
	// DefaultConcurrency.
	Concurrency int
	// Poll is how often the store is asked for due deliveries.
	// DefaultPoll.
	Poll time.Duration
	// The wait before attempt n+1 is RetryMin·2^(n-1), at most RetryMax,
	// of which a random half is jitter; after RetryFor since the event
	// was queued, a failed delivery is given up.
	RetryMin, RetryMax, RetryFor time.Duration
	// AllowPrivate lets deliveries reach private, loopback and link-local
	// addresses, which are refused by default.
	AllowPrivate bool

	Metrics *Metrics     // nil records nothing
	Logger  *slog.Logger // discarded if nil
}

// Deliverer sends the due deliveries of every webhook.
type Deliverer struct {
	store  cdnapi.WebhookStore
	cfg    Config
	client *http.Client
	lease  time.Duration

	mu       sync.Mutex
	inFlight map[string]int // attempts in flight per webhook ID
}

// New returns a Deliverer on store. It starts nothing.
func New(store cdnapi.WebhookStore, cfg Config) *Deliverer {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.RetryMin <= 0 {
		cfg.RetryMin = DefaultRetryMin
	}
	if cfg.RetryMax <= 0 {
		cfg.RetryMax = DefaultRetryMax
	}
	if cfg.RetryFor <= 0 {
		cfg.RetryFor = DefaultRetryFor
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Deliverer{
		store: store, cfg: cfg, client: newClient(cfg.Timeout, cfg.AllowPrivate),
		// An attempt ends within Timeout, and its outcome is written within
		// finishTimeout after; a second more for the clocks' differences.
		lease:    cfg.Timeout + finishTimeout + time.Second,
		inFlight: map[string]int{},
	}
}

// Run delivers until ctx ends, then waits for the attempts in flight: they
// are cut short, and recorded as failed so that they are due again at once.
func (d *Deliverer) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	t := time.NewTicker(d.cfg.Poll)
	defer t.Stop()
	var lastStats, lastPrune time.Time
	for {
		d.poll(ctx, &wg)
		if now := time.Now(); now.Sub(lastStats) >= time.Second {
			lastStats = now
			d.refreshStats(ctx)
		}
		if now := time.Now(); now.Sub(lastPrune) >= time.Hour {
			lastPrune = now
			d.prune(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// poll claims what each webhook has due, up to its free slots, and starts
// an attempt for each.
func (d *Deliverer) poll(ctx context.Context, wg *sync.WaitGroup) {
	hooks, err := d.store.Webhooks(ctx)
	if err != nil {
		if ctx.Err() == nil {
			d.cfg.Logger.Debug("webhook: cannot read the webhooks", "error", err)
		}
		return
	}
	for _, w := range hooks {
		d.mu.Lock()
		free := d.cfg.Concurrency - d.inFlight[w.ID]
		d.mu.Unlock()
		if free <= 0 {
			continue
		}
		claimed, err := d.store.ClaimDeliveries(ctx, w.ID, free, d.lease)
		if err != nil {
			if ctx.Err() == nil {
				d.cfg.Logger.Debug("webhook: cannot claim deliveries", "webhook", w.ID, "error", err)
			}
			return
		}
		d.mu.Lock()
		d.inFlight[w.ID] += len(claimed)
		d.mu.Unlock()
		for _, dl := range claimed {
			wg.Go(func() {
				defer func() {
					d.mu.Lock()
					d.inFlight[w.ID]--
					d.mu.Unlock()
				}()
				d.attempt(ctx, dl)
			})
		}
	}
}

// attempt sends one delivery and records its outcome.
func (d *Deliverer) attempt(ctx context.Context, dl cdnapi.Delivery) {
	a := d.send(ctx, dl)
	var retryIn time.Duration
	switch {
	case a.Result == cdnapi.DeliveryFailed && ctx.Err() != nil:
		// Cut short by shutdown: due again at once, for whoever is left.
	case a.Result == cdnapi.DeliveryFailed && time.Since(dl.Queued) >= d.cfg.RetryFor:
		a.Result = cdnapi.DeliveryGaveUp
	case a.Result == cdnapi.DeliveryFailed:
		retryIn = d.backoff(dl.Attempt)
	}
	// The outcome is written even while shutting down: otherwise the
	// delivery would wait for its lease.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	if err := d.store.FinishDelivery(fctx, dl, a, retryIn); err != nil {
		// The lease makes it due again; a receiver may see it twice.
		d.cfg.Logger.Warn("webhook: cannot record an attempt", "webhook", dl.Webhook.ID, "event", dl.Event.ID, "error", err)
		return
	}
	d.cfg.Metrics.attempted(a.Result)
	switch a.Result {
	case cdnapi.DeliveryGone:
		d.cfg.Logger.Warn("webhook: the receiver answered 410 Gone; webhook removed", "webhook", dl.Webhook.ID)
	case cdnapi.DeliveryGaveUp:
		d.cfg.Logger.Warn("webhook: delivery given up", "webhook", dl.Webhook.ID, "event", dl.Event.ID,
			"attempts", dl.Attempt, "status_code", a.StatusCode, "error", a.Error)
	default:
		d.cfg.Logger.Debug("webhook: attempt", "webhook", dl.Webhook.ID, "event", dl.Event.ID, "attempt", dl.Attempt,
			"result", a.Result, "status_code", a.StatusCode, "error", a.Error, "took", a.Latency)
	}
}

// send makes one attempt and returns its record, with the result
// delivered, gone or failed.
func (d *Deliverer) send(ctx context.Context, dl cdnapi.Delivery) (a cdnapi.DeliveryAttempt) {
	a = cdnapi.DeliveryAttempt{WebhookID: dl.Webhook.ID, EventID: dl.Event.ID, EventType: dl.Event.Type,
		Attempt: dl.Attempt, Result: cdnapi.DeliveryFailed}
	start := time.Now()
	defer func() { a.At = time.Now(); a.Latency = a.At.Sub(start) }()
	body := Body(dl.Event)
	// During a rotation's grace both secrets sign, in one header, so that
	// a receiver holding either verifies the delivery (Standard Webhooks:
	// space-separated signatures, any one of which may match).
	var sigs []string
	for _, secret := range dl.Webhook.SigningSecrets(start) {
		key, err := cdnapi.WebhookSecretKey(secret)
		if err != nil {
			a.Error = "the webhook's secret is malformed"
			return a
		}
		sigs = append(sigs, Signature(key, dl.Event.ID, start, body))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, dl.Webhook.URL, bytes.NewReader(body))
	if err != nil {
		a.Error = "the webhook's URL is malformed"
		return a
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "cdnapi-webhooks/1")
	req.Header.Set(HeaderID, dl.Event.ID)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(start.Unix(), 10))
	req.Header.Set(HeaderSignature, strings.Join(sigs, " "))
	// What checkHost refuses is refused before any dial, and so before
	// any DNS query.
	if _, err := checkHost(req.URL.Hostname(), d.cfg.AllowPrivate); err != nil {
		a.Error = describe(err)
		return a
	}
	res, err := d.client.Do(req)
	if err != nil {
		a.Error = describe(err)
		return a
	}
	// Read a little of the answer so that the connection can be reused;
	// what it says is not kept.
	io.Copy(io.Discard, io.LimitReader(res.Body, 4<<10))
	res.Body.Close()
	a.StatusCode = res.StatusCode
	switch {
	case res.StatusCode >= 200 && res.StatusCode < 300:
		a.Result = cdnapi.DeliveryDelivered
	case res.StatusCode == http.StatusGone:
		a.Result = cdnapi.DeliveryGone
	case res.StatusCode >= 300 && res.StatusCode < 400:
		// Only 307 and 308 are followed (see newClient).
		a.Error = "redirect not followed: only 307 and 308 keep the POST"
	}
	return a
}

// backoff returns the wait after the failure of attempt n: RetryMin·2^(n-1)
// up to RetryMax, half of it random, so that receivers coming back are not
// hit by every sender at once.
func (d *Deliverer) backoff(n int) time.Duration {
	wait := d.cfg.RetryMax
	if n-1 < 40 {
		wait = min(d.cfg.RetryMin<<(n-1), d.cfg.RetryMax)
		if wait <= 0 { // overflow
			wait = d.cfg.RetryMax
		}
	}
	half := wait / 2
	return half + rand.N(half+1)
}

func (d *Deliverer) refreshStats(ctx context.Context) {
	if d.cfg.Metrics == nil {
		return
	}
	sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if st, err := d.store.OutboxStats(sctx); err == nil {
		d.cfg.Metrics.setStats(st)
	}
}

// prune deletes events and attempts older than EventRetention in small
// batches.
func (d *Deliverer) prune(ctx context.Context) {
	cutoff := time.Now().Add(-EventRetention)
	for range 100 {
		n, err := d.store.DeleteEventsBefore(ctx, cutoff, 1000)
		if err != nil || n < 1000 {
			return
		}
	}
}
