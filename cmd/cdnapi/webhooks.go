package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/webhook"
)

const webhooksSynopsis = `webhooks add URL [--events TYPE,…] [--secret-file F] | list | remove ID | deliveries [ID] [--limit N]  [--db DSN]

A webhook is told of every event of the types it subscribes to, by a POST
signed as the Standard Webhooks specification says, from the serve
processes (see serve --webhook-*). add prints the new webhook's secret once;
list never shows it. deliveries lists the latest attempts, newest first.
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
	verb       string // add, list, remove or deliveries
	arg        string // add's URL, remove's ID, deliveries' webhook ID or ""
	events     string
	secretFile string
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
	fs.StringVar(&c.secretFile, "secret-file", "", "add: read the secret from this file (whsec_ and the base64 of 24 to 64 bytes) instead of making one")
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
	case (len(args) == 1 || len(args) == 2) && args[0] == "deliveries":
		if c.limit < 1 || c.limit > 1000 {
			return c, usageError{"webhooks deliveries: --limit must be from 1 to 1000"}
		}
	default:
		return c, usageError{"webhooks: want add URL, list, remove ID or deliveries [ID] (see cdnapi webhooks --help)"}
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
	case "deliveries":
		return listDeliveries(ctx, env, hooks, cfg.arg, cfg.limit)
	}
	return listWebhooks(ctx, env, hooks)
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
	fmt.Fprintln(tw, "ID\tURL\tEVENTS\tCREATED")
	for _, w := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", w.ID, w.URL, joinTypes(w.Events), cdnapi.Timestamp(w.CreatedAt))
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
	w.Secret = cdnapi.NewWebhookSecret()
	if secretFile != "" {
		b, err := os.ReadFile(secretFile)
		if err != nil {
			return w, fmt.Errorf("webhooks add: --secret-file: %w", err)
		}
		w.Secret = strings.TrimSpace(string(b))
		if _, err := cdnapi.WebhookSecretKey(w.Secret); err != nil {
			return w, usageError{"webhooks add: --secret-file: " + err.Error()}
		}
	}
	return w, nil
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
