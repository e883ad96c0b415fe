package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/webhook"
)

const webhooksSynopsis = `webhooks add URL [--events TYPE,…] [--secret-file F] [--webhook-allow-private] | list | remove ID | rotate-secret ID [--grace D] [--secret-file F] | deliveries [ID] [--limit N]  [--db DSN]

A webhook is told of every event of the types it subscribes to, by a POST
signed as the Standard Webhooks specification says, from the serve
processes (see serve --webhook-*). add prints the new webhook's secret once;
list never shows it. add refuses a target that serve would refuse: a private,
loopback or link-local address, or a name resolving to one (resolved once,
now), unless --webhook-allow-private; and a host that is a number but not a
dotted-quad address (0x7f000001, 127.1), always. rotate-secret gives the
webhook a new secret, printed once: for --grace (default 24h) the old one
signs each delivery too, so receivers can move to the new one without
failing one; after it, only the new one signs. deliveries lists the latest
attempts, newest first.
Event types: incident.opened, incident.updated, incident.resolved,
region.changed, file.quarantined (default: all).`

// webhooksSynopses are the help of each verb of webhooks.
var webhooksSynopses = map[string]string{
	"add": `webhooks add URL [--events TYPE,…] [--secret-file F]  [--db DSN]

Adds a webhook: the serve processes POST each event of the types it
subscribes to (default: all) to URL, signed as the Standard Webhooks
specification says. add prints the new webhook's secret once, or takes it
from --secret-file. Event types: incident.opened, incident.updated,
incident.resolved, region.changed, file.quarantined.`,
	"list": `webhooks list  [--db DSN]

Lists the webhooks: their ID, URL and event types, never their secret.`,
	"remove": `webhooks remove ID  [--db DSN]

Removes a webhook; it is told of no event after.`,
	"deliveries": `webhooks deliveries [ID] [--limit N]  [--db DSN]

Lists the latest attempts to deliver events, newest first, of every webhook
or of webhook ID.`,
}

// webhooksConfig is what webhooks' arguments and their CDNAPI_* variables
// say.
type webhooksConfig struct {
	verb       string // add, list, remove, rotate-secret or deliveries
	arg        string // add's URL, remove's and rotate-secret's ID, deliveries' webhook ID or ""
	events     string
	secretFile string
	allowPriv  bool
	grace      time.Duration
	limit      int
	db         storeFlags
	hook       cdnapi.Webhook // add's, made from the arguments
}

// parseWebhooksConfig parses webhooks' arguments, checks the words and
// makes add's webhook, before anything is opened, so that a typo never
// reaches the database.
func parseWebhooksConfig(env *environment, args []string) (webhooksConfig, error) {
	var c webhooksConfig
	fs := newSubcommandFlagSet("webhooks", webhooksSynopsis, webhooksSynopses, args, env.stdout)
	c.db = addStoreFlags(fs, fewWrites)
	fs.StringVar(&c.events, "events", "", "add: comma-separated event types (default: all)")
	fs.StringVar(&c.secretFile, "secret-file", "", "add, rotate-secret: read the secret from this file (whsec_ and the base64 of 24 to 64 bytes) instead of making one")
	fs.BoolVar(&c.allowPriv, "webhook-allow-private", false, "add: accept a target on a private, loopback or link-local address, as serve --webhook-allow-private delivers to one")
	fs.DurationVar(&c.grace, "grace", defaultRotationGrace, "rotate-secret: how long the old secret signs deliveries too; 0 stops it at once")
	fs.IntVar(&c.limit, "limit", 50, "deliveries: how many attempts to show, 1 to 1000")
	args, err := parseArgs(fs, args, env.getenv)
	if err != nil {
		return c, err
	}
	if len(args) == 2 {
		c.arg = args[1]
	}
	switch {
	case len(args) == 2 && args[0] == "add":
		if c.hook, err = newWebhook(c.arg, c.events, c.secretFile); err != nil {
			return c, err
		}
	case len(args) == 1 && args[0] == "list":
	case len(args) == 2 && args[0] == "remove":
		if !strings.HasPrefix(c.arg, cdnapi.WebhookIDPrefix) {
			return c, usageError{fmt.Sprintf("webhooks remove: %q is not a webhook ID; IDs start with %q (see cdnapi webhooks list)", c.arg, cdnapi.WebhookIDPrefix)}
		}
	case len(args) == 2 && args[0] == "rotate-secret":
		if !strings.HasPrefix(c.arg, cdnapi.WebhookIDPrefix) {
			return c, usageError{fmt.Sprintf("webhooks rotate-secret: %q is not a webhook ID; IDs start with %q (see cdnapi webhooks list)", c.arg, cdnapi.WebhookIDPrefix)}
		}
		if c.grace < 0 || c.grace > maxRotationGrace {
			return c, usageError{fmt.Sprintf("webhooks rotate-secret: --grace must be from 0 to %v", maxRotationGrace)}
		}
		if c.hook.Secret, err = readSecret("webhooks rotate-secret", c.secretFile); err != nil {
			return c, err
		}
	case (len(args) == 1 || len(args) == 2) && args[0] == "deliveries":
		if c.limit < 1 || c.limit > 1000 {
			return c, usageError{"webhooks deliveries: --limit must be from 1 to 1000"}
		}
	default:
		return c, usageError{"webhooks: want add URL, list, remove ID, rotate-secret ID or deliveries [ID] (see cdnapi webhooks --help)"}
	}
	c.verb = args[0]
	return c, nil
}

// runWebhooks is the webhooks command: it checks the words, then opens the
// store and runs the verb.
func runWebhooks(ctx context.Context, env *environment, args []string) error {
	cfg, err := parseWebhooksConfig(env, args)
	if err != nil {
		return err
	}
	if cfg.verb == "add" {
		if err := checkWebhookTarget(ctx, env, cfg.hook.URL, cfg.allowPriv); err != nil {
			return err
		}
	}
	st, err := cfg.db.openMigrated(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	hooks, ok := st.(cdnapi.WebhookStore)
	if !ok {
		return fmt.Errorf("webhooks: the store %T keeps no webhooks", st)
	}
	switch cfg.verb {
	case "add":
		return addWebhook(ctx, env, hooks, cfg.hook)
	case "remove":
		return removeWebhook(ctx, env, hooks, cfg.arg)
	case "rotate-secret":
		return rotateSecret(ctx, env, hooks, cfg.arg, cfg.hook.Secret, cfg.grace)
	case "deliveries":
		return listDeliveries(ctx, env, hooks, cfg.arg, cfg.limit)
	}
	return listWebhooks(ctx, env, hooks)
}

// checkWebhookTarget refuses, as a usage error, a target that serve's
// deliveries would refuse (see webhook.CheckTarget); a name that does not
// resolve now is only warned of, since deliveries resolve it each time.
func checkWebhookTarget(ctx context.Context, env *environment, target string, allowPrivate bool) error {
	lookup := func(ctx context.Context, name string) ([]netip.Addr, error) {
		return net.DefaultResolver.LookupNetIP(ctx, "ip", name)
	}
	err := webhook.CheckTarget(ctx, target, allowPrivate, lookup)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, webhook.ErrUnresolved):
		fmt.Fprintf(env.stderr, "webhooks add: warning: %v; deliveries will resolve it each time\n", err)
		return nil
	case errors.Is(err, webhook.ErrRefusedAddress):
		return usageError{"webhooks add: " + err.Error() + " (serve delivers there only with --webhook-allow-private; so does add)"}
	}
	return usageError{"webhooks add: " + err.Error()}
}

// addWebhook stores hook and prints it, with its secret, this once.
func addWebhook(ctx context.Context, env *environment, hooks cdnapi.WebhookStore, hook cdnapi.Webhook) error {
	if err := hooks.AddWebhook(ctx, hook); err != nil {
		return fmt.Errorf("webhooks add: %w", err)
	}
	fmt.Fprintf(env.stdout, "id      %s\nurl     %s\nevents  %s\nsecret  %s\n", hook.ID, hook.URL, joinTypes(hook.Events), hook.Secret)
	fmt.Fprintln(env.stderr, "the secret above is shown only once; receivers verify the webhook-signature header with it")
	return nil
}

// removeWebhook removes the webhook id and its waiting deliveries.
func removeWebhook(ctx context.Context, env *environment, hooks cdnapi.WebhookStore, id string) error {
	if err := hooks.RemoveWebhook(ctx, id); errors.Is(err, cdnapi.ErrNotFound) {
		return fmt.Errorf("webhooks remove: there is no webhook %s (see cdnapi webhooks list)", id)
	} else if err != nil {
		return fmt.Errorf("webhooks remove: %w", err)
	}
	fmt.Fprintf(env.stdout, "removed %s and its waiting deliveries\n", id)
	return nil
}

// The grace of rotate-secret: by default a day, long enough for a
// receiver's owner to deploy the new secret; at most 30 days, as a secret
// meant to be retired should not sign for long.
const (
	defaultRotationGrace = 24 * time.Hour
	maxRotationGrace     = 30 * 24 * time.Hour
)

// rotateSecret gives the webhook id the secret, keeping its old one
// signing for grace, and prints the new one this once.
func rotateSecret(ctx context.Context, env *environment, hooks cdnapi.WebhookStore, id, secret string, grace time.Duration) error {
	var until time.Time
	if grace > 0 {
		// Stored in whole seconds: rounded up, the grace is never shorter
		// than asked.
		until = time.Now().Add(grace + time.Second - 1).Truncate(time.Second)
	}
	if err := hooks.RotateWebhookSecret(ctx, id, secret, until); errors.Is(err, cdnapi.ErrNotFound) {
		return fmt.Errorf("webhooks rotate-secret: there is no webhook %s (see cdnapi webhooks list)", id)
	} else if err != nil {
		return fmt.Errorf("webhooks rotate-secret: %w", err)
	}
	fmt.Fprintf(env.stdout, "id      %s\nsecret  %s\n", id, secret)
	if until.IsZero() {
		fmt.Fprintln(env.stdout, "old     no longer signs")
	} else {
		fmt.Fprintf(env.stdout, "old     signs too until %s\n", cdnapi.Timestamp(until))
	}
	fmt.Fprintln(env.stderr, "the secret above is shown only once; give it to the receiver before the old one stops signing")
	return nil
}

// listDeliveries prints the latest limit delivery attempts, of the
// webhook id or, for "", of every webhook.
func listDeliveries(ctx context.Context, env *environment, hooks cdnapi.WebhookStore, id string, limit int) error {
	attempts, err := hooks.DeliveryAttempts(ctx, id, limit)
	if err != nil {
		return fmt.Errorf("webhooks deliveries: %w", err)
	}
	printAttempts(env, attempts)
	return nil
}

// listWebhooks prints the webhooks as a table, without their secrets.
func listWebhooks(ctx context.Context, env *environment, hooks cdnapi.WebhookStore) error {
	list, err := hooks.Webhooks(ctx)
	if err != nil {
		return fmt.Errorf("webhooks list: %w", err)
	}
	tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tURL\tEVENTS\tCREATED\tOLD SECRET SIGNS UNTIL")
	now := time.Now()
	for _, w := range list {
		until := "-"
		if len(w.SigningSecrets(now)) > 1 {
			until = cdnapi.Timestamp(w.PreviousUntil)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", w.ID, w.URL, joinTypes(w.Events), cdnapi.Timestamp(w.CreatedAt), until)
	}
	return tw.Flush()
}

// newWebhook checks add's arguments and returns the webhook they describe.
func newWebhook(url, events, secretFile string) (cdnapi.Webhook, error) {
	w := cdnapi.Webhook{ID: cdnapi.NewWebhookID(), URL: url, Events: cdnapi.EventTypes, CreatedAt: time.Now()}
	if err := cdnapi.ValidateWebhookURL(url); err != nil {
		return w, usageError{"webhooks add: " + err.Error()}
	}
	if events != "" {
		w.Events = nil
		for _, e := range strings.Split(events, ",") {
			t := cdnapi.EventType(strings.TrimSpace(e))
			if !t.Valid() {
				return w, usageError{fmt.Sprintf("webhooks add: --events: unknown type %q; want %s", e, joinTypes(cdnapi.EventTypes))}
			}
			if !w.Wants(t) {
				w.Events = append(w.Events, t)
			}
		}
	}
	var err error
	w.Secret, err = readSecret("webhooks add", secretFile)
	return w, err
}

// readSecret returns a fresh secret, or the one in secretFile when given.
func readSecret(verb, secretFile string) (string, error) {
	if secretFile == "" {
		return cdnapi.NewWebhookSecret(), nil
	}
	b, err := os.ReadFile(secretFile)
	if err != nil {
		return "", fmt.Errorf("%s: --secret-file: %w", verb, err)
	}
	secret := strings.TrimSpace(string(b))
	if _, err := cdnapi.WebhookSecretKey(secret); err != nil {
		return "", usageError{verb + ": --secret-file: " + err.Error()}
	}
	return secret, nil
}

func joinTypes(types []cdnapi.EventType) string {
	s := make([]string, len(types))
	for i, t := range types {
		s[i] = string(t)
	}
	return strings.Join(s, ",")
}

// printAttempts shows attempts as a table.
func printAttempts(env *environment, attempts []cdnapi.DeliveryAttempt) {
	tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AT\tWEBHOOK\tEVENT\tTYPE\tATTEMPT\tRESULT\tSTATUS\tLATENCY\tERROR")
	for _, a := range attempts {
		status, errText := "-", "-"
		if a.StatusCode != 0 {
			status = fmt.Sprint(a.StatusCode)
		}
		if a.Error != "" {
			errText = a.Error
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%v\t%s\n", a.At.UTC().Format(time.RFC3339Nano), a.WebhookID, a.EventID,
			a.EventType, a.Attempt, a.Result, status, a.Latency.Round(time.Millisecond), errText)
	}
	tw.Flush()
}

// webhookFlags are serve's flags of the deliveries.
type webhookFlags struct {
	deliver      bool
	allowPrivate bool
	timeout      time.Duration
	concurrency  int
	poll         time.Duration
	retryMin     time.Duration
	retryMax     time.Duration
	retryFor     time.Duration
}

func addWebhookFlags(fs *flag.FlagSet) *webhookFlags {
	f := &webhookFlags{}
	fs.BoolVar(&f.deliver, "webhook-deliver", true, "deliver the webhooks' events from this process (with PostgreSQL, any number of processes share the work; each event is sent by one)")
	fs.BoolVar(&f.allowPrivate, "webhook-allow-private", false, "let webhooks reach private, loopback and link-local addresses (refused by default, so a webhook cannot probe the internal network)")
	fs.DurationVar(&f.timeout, "webhook-timeout", webhook.DefaultTimeout, "how long one delivery attempt may take")
	fs.IntVar(&f.concurrency, "webhook-concurrency", webhook.DefaultConcurrency, "the most attempts in flight to one webhook at once")
	fs.DurationVar(&f.poll, "webhook-poll", webhook.DefaultPoll, "how often the store is asked for due deliveries")
	fs.DurationVar(&f.retryMin, "webhook-retry-min", webhook.DefaultRetryMin, "the wait after the first failed attempt; it doubles after each failure")
	fs.DurationVar(&f.retryMax, "webhook-retry-max", webhook.DefaultRetryMax, "the longest wait between attempts")
	fs.DurationVar(&f.retryFor, "webhook-retry-for", webhook.DefaultRetryFor, "how long a failing delivery is retried before it is given up")
	return f
}

func (f *webhookFlags) validate() error {
	if f.timeout <= 0 || f.poll <= 0 || f.retryMin <= 0 || f.retryMax < f.retryMin || f.retryFor <= 0 {
		return usageError{"--webhook-timeout, --webhook-poll, --webhook-retry-min and --webhook-retry-for must be positive, and --webhook-retry-max at least --webhook-retry-min"}
	}
	if f.concurrency < 1 || f.concurrency > 64 {
		return usageError{"--webhook-concurrency must be from 1 to 64"}
	}
	return nil
}

// deliverer returns the deliverer of st's webhooks that serve runs, or
// nil when this process does not deliver. It must be given the store
// before measureStore wraps it.
func (f *webhookFlags) deliverer(st store, reg prometheus.Registerer, logger *slog.Logger) *webhook.Deliverer {
	hooks, ok := st.(cdnapi.WebhookStore)
	if f == nil || !ok || !f.deliver {
		return nil
	}
	return webhook.New(hooks, webhook.Config{
		Timeout: f.timeout, Concurrency: f.concurrency, Poll: f.poll,
		RetryMin: f.retryMin, RetryMax: f.retryMax, RetryFor: f.retryFor,
		AllowPrivate: f.allowPrivate, Metrics: webhook.NewMetrics(reg), Logger: logger,
	})
}

// startDeliveries runs d until the returned stop is called; stop waits
// for the attempts in flight to be recorded.
func startDeliveries(ctx context.Context, d *webhook.Deliverer) (stop func()) {
	if d == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() { d.Run(ctx); close(done) }()
	return func() { cancel(); <-done }
}
