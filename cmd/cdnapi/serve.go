package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/api"
	"github.com/cdnapi/cdnapi/internal/demo"
	"github.com/cdnapi/cdnapi/internal/health"
	"github.com/cdnapi/cdnapi/internal/httpapi"
	"github.com/cdnapi/cdnapi/internal/ingest"
	"github.com/cdnapi/cdnapi/internal/retention"
)

// The size of the demo data that serve --demo writes into an empty store:
// enough for several pages of every list, small enough to write in a blink.
const (
	demoFiles  = 2500
	demoAssets = 10000
)

// defaultAssetRetention is how long serve keeps assets: a week of recent
// requests, well beyond the three days of demo assets that --demo writes.
const defaultAssetRetention = 7 * 24 * time.Hour

func runServe(ctx context.Context, env *environment, args []string) error {
	fs := newFlagSet("serve", "serve [flags]", env.stdout)
	var (
		apiAddr      = fs.String("api-addr", "127.0.0.1:8080", "address of the API listener (files, status)")
		edgeAddr     = fs.String("edge-addr", "127.0.0.1:8081", "address of the edge listener (regions, assets)")
		adminAddr    = fs.String("admin-addr", "127.0.0.1:9090", "address of the admin listener (healthz, readyz, metrics, pprof)")
		region       = fs.String("region", "local", "name of the answering region, shown in the status document")
		project      = fs.String("project", "default", "the default project, whose files are listed")
		withDemo     = fs.Bool("demo", false, "fill an empty database with demo data")
		secret       = fs.String("cursor-secret", "", "key that signs cursors (at least 16 bytes); default: generated once and kept in the database")
		storeTimeout = fs.Duration("store-timeout", 2*time.Second, "deadline of a request's store work; past it the answer is 503")
		interval     = fs.Duration("status-interval", 5*time.Second, "how often component statuses are evaluated")
		uploadURL    = fs.String("upload-health-url", "", "health URL of the upload service (default: status set by operators)")
		virusURL     = fs.String("virus-scanning-health-url", "", "health URL of virus scanning (default: status set by operators)")
		origins      = fs.String("cors-origins", "*", "comma-separated origins allowed by CORS, or *")
		drain        = fs.Duration("shutdown-timeout", 20*time.Second, "how long shutdown waits for requests in flight")
		drainDelay   = fs.Duration("shutdown-delay", 0, "on SIGTERM, how long to keep serving with /readyz failing before closing the listeners, so load balancers notice first")
		pageTTL      = fs.Duration("page-cache-ttl", time.Second, "how long a rendered list page is served again to requests for the same URL; 0 turns the cache off")
		keepAssets   = fs.Duration("asset-retention", defaultAssetRetention, "delete assets older than this in the background, in small batches; 0 keeps every asset")
		pruneEvery   = fs.Duration("prune-interval", retention.DefaultInterval, "how often assets past --asset-retention are deleted")
		logFormat    = fs.String("log-format", "json", "log format: json or text")
		logLevel     = fs.String("log-level", "info", "log level: debug, info, warn or error")
	)
	db := addStoreFlags(fs, true)
	access := addGuardFlags(fs)
	if err := parseFlags(fs, args, env.getenv); err != nil {
		return err
	}
	logger, err := newLogger(env.stderr, *logFormat, *logLevel)
	if err != nil {
		return err
	}
	if !ingest.ValidProject(*project) {
		return usageError{fmt.Sprintf("--project %q: want 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", *project)}
	}
	if *pageTTL < 0 || *drainDelay < 0 {
		return usageError{"--page-cache-ttl and --shutdown-delay must not be negative"}
	}
	if *keepAssets < 0 || *pruneEvery <= 0 {
		return usageError{"--asset-retention must not be negative, and --prune-interval must be positive"}
	}

	st, err := db.openMigrated(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	if *withDemo {
		if err := seedDemoIfEmpty(ctx, st, *project, logger); err != nil {
			return err
		}
	}
	codec, err := cursorCodec(ctx, st, *secret)
	if err != nil {
		return err
	}
	guard, err := access.build(ctx, st, logger)
	if err != nil {
		return err
	}
	stopGuard := guard.start(ctx)
	defer stopGuard()
	var pruner *retention.Pruner // nil: keep every asset
	if *keepAssets > 0 {
		pruner = retention.New(st, retention.Config{Retention: *keepAssets, Interval: *pruneEvery, Logger: logger})
	}

	ls := []*listener{{name: "api", addr: *apiAddr}, {name: "edge", addr: *edgeAddr}, {name: "admin", addr: *adminAddr}}
	if err := listenAll(ls); err != nil {
		return err
	}

	status := health.New(st, health.Config{
		Region:                 *region,
		Interval:               *interval,
		UploadHealthURL:        *uploadURL,
		VirusScanningHealthURL: *virusURL,
		History:                st,
		APIStatus:              guard.apiStatus,
		Logger:                 logger,
	})
	status.Evaluate(ctx)

	var draining atomic.Bool
	registry := prometheus.NewRegistry()
	registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	registry.MustRegister(guard.collectors...)
	metrics := httpapi.NewMetrics(registry)
	cfg := httpapi.Config{
		Store:   st,
		Cursors: codec,
		Status:  status,
		History: st,
		// The status page refreshes as often as the statuses change.
		StatusRefresh: *interval,
		Project:       *project,
		Logger:        logger,
		Metrics:       metrics,
		StoreTimeout:  *storeTimeout,
		PageCacheTTL:  *pageTTL,
		CORSOrigins:   strings.Split(*origins, ","),
		OpenAPI:       api.JSON(),
		Guard:         guard.wrap,
	}
	ls[0].srv = newServer(httpapi.NewAPI(cfg), logger)
	ls[1].srv = newServer(httpapi.NewEdge(cfg), logger)
	ls[2].srv = newServer(httpapi.NewAdmin(httpapi.AdminConfig{
		Store: st, Gatherer: registry, Logger: logger, Metrics: metrics, Draining: draining.Load,
	}), logger)

	evalCtx, stopEval := context.WithCancel(context.WithoutCancel(ctx))
	defer stopEval()
	go status.Run(evalCtx)

	// The pruner works in the background until shutdown begins; the store
	// closes only after it has stopped.
	pruneCtx, stopPruning := context.WithCancel(context.WithoutCancel(ctx))
	var pruning sync.WaitGroup
	defer func() {
		stopPruning()
		pruning.Wait()
	}()
	if pruner != nil {
		pruning.Go(func() { pruner.Run(pruneCtx) })
	}

	err = serveUntilDone(ctx, logger, ls, drainPolicy{
		begin: func() {
			// Report maintenance and fail /readyz while draining, so that
			// load balancers take the process out before it closes.
			draining.Store(true)
			status.SetDraining()
			stopPruning()
		},
		delay:   *drainDelay,
		timeout: *drain,
	})
	stopEval()
	pruning.Wait()
	logger.Info("stopped")
	return err
}

// cursorCodec returns the codec for the configured secret, or for the one
// kept in the database, which every replica sharing it then agrees on.
func cursorCodec(ctx context.Context, st cdnapi.Store, secret string) (*cdnapi.CursorCodec, error) {
	key := []byte(secret)
	if secret == "" {
		var err error
		if key, err = st.CursorSecret(ctx); err != nil {
			return nil, fmt.Errorf("read the cursor secret: %w", err)
		}
	}
	codec, err := cdnapi.NewCursorCodec(key)
	if err != nil {
		return nil, usageError{"--cursor-secret must be at least 16 bytes long"}
	}
	return codec, nil
}

// seedDemoIfEmpty writes the demo data when the store has no regions and the
// project no files, so that --demo never mixes demo rows into real data.
func seedDemoIfEmpty(ctx context.Context, st cdnapi.Store, project string, logger *slog.Logger) error {
	regions, err := st.ListRegions(ctx)
	if err != nil {
		return fmt.Errorf("check for existing data: %w", err)
	}
	files, err := st.ListFiles(ctx, cdnapi.FileQuery{Project: project, Limit: 1})
	if err != nil {
		return fmt.Errorf("check for existing data: %w", err)
	}
	if len(regions) > 0 || len(files) > 0 {
		logger.Info("demo data skipped: the database is not empty")
		return nil
	}
	opts := demo.SeedOptions{Project: project, Files: demoFiles, Assets: demoAssets, Seed: 1, Now: time.Now()}
	if err := st.Write(ctx, func(w cdnapi.Writer) error {
		// One transaction: a seed that is stopped half-way leaves nothing.
		return demo.Seed(ctx, w, opts)
	}); err != nil {
		return fmt.Errorf("write demo data: %w", err)
	}
	logger.Info("demo data written", "files", demoFiles, "assets", demoAssets)
	return nil
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
