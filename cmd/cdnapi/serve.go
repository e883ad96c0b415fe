package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/buildinfo"
	"github.com/cdnapi/cdnapi/internal/httpapi"
	"github.com/cdnapi/cdnapi/internal/logbuf"
	"github.com/cdnapi/cdnapi/internal/retention"
	"github.com/cdnapi/cdnapi/internal/sqlite"
)

// serveGCPercent is the GOGC of serve, unless GOGC is set. serve's live heap
// is small (a few MiB: the page cache, the pools, the metrics) and every
// answer allocates, so at the default of 100 the collector runs often and
// much of its cost is fixed per cycle. At 200, in interleaved wrk runs of
// one build against itself on a million files, the hot page took 14% less
// CPU per answer and deep pages 12% less, for 4 MiB more peak RSS (49
// against 45 MiB under deep pages); 400 gained nothing more and cost 8 MiB.
const serveGCPercent = 200

// defaultAssetRetention is how long serve keeps assets: a week of recent
// requests, well beyond the three days of demo assets that --demo writes.
const defaultAssetRetention = 7 * 24 * time.Hour

// serveConfig is what serve's flags and their CDNAPI_* variables say. A new
// flag is a field here and a line in parseServeConfig; a rule about its
// value goes in validate, and its use in wireServe.
type serveConfig struct {
	apiAddr, edgeAddr, adminAddr string
	region                       string
	project                      string
	demo                         bool
	cursorSecret                 string
	storeTimeout                 time.Duration
	statusInterval               time.Duration
	regionProbes                 regionProbes
	corsOrigins                  string
	publicURL                    string
	shutdownTimeout              time.Duration
	shutdownDelay                time.Duration
	pageCacheTTL                 time.Duration
	h2c                          bool
	streamsPerClient             int
	assetRetention               time.Duration
	pruneInterval                time.Duration
	logFormat, logLevel          string
	db                           storeFlags
	guard                        guardFlags
	webhooks                     *webhookFlags
	uploads                      uploadFlags
	ingest                       ingestFlags
}

// parseServeConfig parses serve's arguments and checks the values.
func parseServeConfig(env *environment, args []string) (serveConfig, error) {
	var c serveConfig
	fs := newFlagSet("serve", "serve [flags]", env.stdout)
	fs.StringVar(&c.apiAddr, "api-addr", "127.0.0.1:8080", "address of the API listener (files, status)")
	fs.StringVar(&c.edgeAddr, "edge-addr", "127.0.0.1:8081", "address of the edge listener (regions, assets)")
	fs.StringVar(&c.adminAddr, "admin-addr", "127.0.0.1:9090", "address of the admin listener (healthz, readyz, metrics, pprof)")
	fs.StringVar(&c.region, "region", cdnapi.UnnamedRegion, "name of the answering region, shown in the status document")
	fs.StringVar(&c.project, "project", "default", "the default project, whose files are listed")
	fs.BoolVar(&c.demo, "demo", false, "fill an empty database with demo data")
	fs.StringVar(&c.cursorSecret, "cursor-secret", "", "key that signs cursors (at least 16 bytes); default: generated once and kept in the database")
	fs.DurationVar(&c.storeTimeout, "store-timeout", 2*time.Second, "deadline of a request's store work; past it the answer is 503")
	fs.DurationVar(&c.statusInterval, "status-interval", 5*time.Second, "how often component statuses are evaluated")
	fs.Var(&c.regionProbes, "region-probe", regionProbeHelp)
	fs.StringVar(&c.corsOrigins, "cors-origins", "*", "comma-separated origins allowed by CORS, or *")
	fs.StringVar(&c.publicURL, "public-url", "", "base URL of the API address as readers reach it (https://status.example.com): the Atom feed's links and ids start with it; default: each request's scheme and Host")
	fs.DurationVar(&c.shutdownTimeout, "shutdown-timeout", 20*time.Second, "how long shutdown waits for requests in flight")
	fs.DurationVar(&c.shutdownDelay, "shutdown-delay", 0, "on SIGTERM, how long to keep serving with /readyz failing before closing the listeners, so load balancers notice first")
	fs.DurationVar(&c.pageCacheTTL, "page-cache-ttl", 250*time.Millisecond, "how long a rendered list page is served again to requests for the same URL; 0 turns the cache off")
	fs.BoolVar(&c.h2c, "h2c", true, "also speak HTTP/2 without TLS (h2c, prior knowledge) on the API and edge addresses; --h2c=false for HTTP/1.1 only")
	fs.IntVar(&c.streamsPerClient, "stream-max-per-client", httpapi.DefaultMaxStreamsPerClient,
		fmt.Sprintf("open status streams (/api/v1/status/stream) one client address may hold, of %d in all; an IPv6 client is its /64", httpapi.DefaultMaxStreams))
	fs.DurationVar(&c.assetRetention, "asset-retention", defaultAssetRetention, "delete assets older than this in the background, in small batches; 0 keeps every asset")
	fs.DurationVar(&c.pruneInterval, "prune-interval", retention.DefaultInterval, "how often assets past --asset-retention are deleted")
	fs.StringVar(&c.logFormat, "log-format", "json", "log format: json or text")
	fs.StringVar(&c.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	c.db = addStoreFlags(fs, serving)
	c.guard = addGuardFlags(fs)
	c.webhooks = addWebhookFlags(fs)
	c.uploads = addUploadFlags(fs)
	c.ingest = addIngestFlags(fs)
	if err := parseFlags(fs, args, env.getenv); err != nil {
		return c, err
	}
	return c, c.validate()
}

// validate reports the first value of c that serve cannot work with, as a
// usageError. The store flags are checked when the store opens, and the
// cursor secret when its codec is made.
func (c serveConfig) validate() error {
	if _, err := newLogger(io.Discard, c.logFormat, c.logLevel); err != nil {
		return err
	}
	if !cdnapi.ValidProject(c.project) {
		return usageError{fmt.Sprintf("--project %q: want 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", c.project)}
	}
	if cdnapi.ReservedProject(c.project) {
		return usageError{fmt.Sprintf("--project %q is reserved for the upload canary; choose another", c.project)}
	}
	if err := c.uploads.validate(); err != nil {
		return err
	}
	if err := validatePublicURL(c.publicURL); err != nil {
		return err
	}
	if err := c.ingest.validate(); err != nil {
		return err
	}
	if c.pageCacheTTL < 0 || c.shutdownDelay < 0 {
		return usageError{"--page-cache-ttl and --shutdown-delay must not be negative"}
	}
	if c.streamsPerClient < 1 {
		return usageError{"--stream-max-per-client must be at least 1"}
	}
	if c.assetRetention < 0 || c.pruneInterval <= 0 {
		return usageError{"--asset-retention must not be negative, and --prune-interval must be positive"}
	}
	if err := c.db.checkNotDirectory(); err != nil {
		return err
	}
	if c.webhooks != nil {
		return c.webhooks.validate()
	}
	return nil
}

// validatePublicURL reports why u cannot be --public-url: it must be
// empty, or an absolute http or https URL with a host and nothing after
// its path (no query, fragment or user).
func validatePublicURL(u string) error {
	if u == "" {
		return nil
	}
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Hostname() == "" ||
		p.User != nil || p.RawQuery != "" || p.Fragment != "" || strings.HasSuffix(u, "?") {
		return usageError{fmt.Sprintf("--public-url %q: want an http:// or https:// URL with a host and no query, fragment or user", u)}
	}
	return nil
}

// runServe is the serve command: it reads the configuration, opens the
// store, wires the listeners to it and serves until ctx ends.
func runServe(ctx context.Context, env *environment, args []string) error {
	cfg, err := parseServeConfig(env, args)
	if err != nil {
		return err
	}
	logger, err := newLogger(env.stderr, cfg.logFormat, cfg.logLevel)
	if err != nil {
		return err
	}
	defer env.collectLessOften(serveGCPercent)()
	ctx = sqlite.WithWaitNotice(ctx, func(msg string) { logger.Info(msg) })
	build := buildinfo.Read()
	logger.Info("starting", "version", build.Version, "revision", build.RevisionLabel(), "go_version", build.GoVersion,
		"db", describeDB(*cfg.db.dsn))
	// The access log goes through a buffer, written out when full, every
	// second and when serve stops: one write per request would cost more
	// than the hot page itself.
	accessBuf := logbuf.New(env.stderr, logbuf.DefaultSize, logbuf.DefaultInterval)
	defer accessBuf.Close()
	accessLog, _ := newAccessLogger(accessBuf, cfg.logFormat, cfg.logLevel) // checked just above
	// The store tells when reads leave the read replica and return.
	cfg.db.logger = logger
	st, err := cfg.db.createMigrated(ctx, func(path string) { logger.Info("created database", "path", path) })
	if err != nil {
		return err
	}
	defer st.Close()
	forecastAtStart(ctx, st, cfg, logger)
	svc, err := wireServe(ctx, cfg, st, logger, accessLog)
	if err != nil {
		return err
	}
	err = svc.run(ctx)
	logger.Info("stopped")
	return err
}

// newAccessLogger is newLogger for the access log. Its JSON lines come from
// httpapi.NewAccessLogHandler: the same lines as slog's JSON handler, at a
// fraction of the cost per request.
func newAccessLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	l, err := newLogger(w, format, level)
	if err != nil || format != "json" {
		return l, err
	}
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(level)) // newLogger checked it
	return slog.New(httpapi.NewAccessLogHandler(w, lvl)), nil
}

func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, usageError{fmt.Sprintf("--log-level must be debug, info, warn or error, not %q", level)}
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch format {
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	}
	return nil, usageError{fmt.Sprintf("--log-format must be json or text, not %q", format)}
}

// forecastAtStart logs what the retention implies for the write rate of the
// last hour, and warns when the database's disk would not hold it. It is
// bounded by forecastTimeout: a slow count must not hold up the start.
func forecastAtStart(ctx context.Context, st store, cfg serveConfig, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, forecastTimeout)
	defer cancel()
	var path string
	if !isPostgres(*cfg.db.dsn) {
		path, _ = sqlitePath(*cfg.db.dsn) // checked when the store was opened
	}
	f, err := forecastRetention(ctx, st, st.Name(), path, cfg.assetRetention, time.Now())
	if err != nil {
		logger.Warn("could not measure the write rate of the last hour for the retention forecast", "err", err)
		return
	}
	f.log(logger)
}

// forecastTimeout bounds the count of forecastAtStart.
const forecastTimeout = 10 * time.Second
