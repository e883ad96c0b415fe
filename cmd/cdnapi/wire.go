package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/api"
	"github.com/cdnapi/cdnapi/internal/buildinfo"
	"github.com/cdnapi/cdnapi/internal/demo"
	"github.com/cdnapi/cdnapi/internal/health"
	"github.com/cdnapi/cdnapi/internal/httpapi"
	"github.com/cdnapi/cdnapi/internal/retention"
	"github.com/cdnapi/cdnapi/internal/webhook"
)

// The size of the demo data that serve --demo writes into an empty store:
// enough for several pages of every list, small enough to write in a blink.
const (
	demoFiles  = 2500
	demoAssets = 10000
)

// service is serve's parts, wired and listening, ready to run.
type service struct {
	logger    *slog.Logger
	listeners listeners
	status    *health.Evaluator
	pruner    *retention.Pruner // nil: keep every asset, and make no partitions
	guard     *guard
	draining  *atomic.Bool       // read by /readyz
	drain     drainPolicy        // begin is set by run
	webhooks  *webhook.Deliverer // nil: this process delivers none
	streams   *httpapi.StatusStreams
	uploads   *uploadPath
	keys      cdnapi.KeyStore // where the canary's key is revoked at stop
	closers   []func() error  // once every listener has stopped
}

// wireServe builds everything serve runs from cfg and the open store, and
// binds the listeners' addresses. Nothing runs until service.run. The
// access log of every listener goes to accessLog.
func wireServe(ctx context.Context, cfg serveConfig, st store, logger, accessLog *slog.Logger) (*service, error) {
	registry := prometheus.NewRegistry()
	deliverer := cfg.webhooks.deliverer(st, registry, logger) // the store itself, not measureStore's wrapper
	st = measureStore(st, registry)
	if cfg.demo {
		if err := seedDemoIfEmpty(ctx, st, cfg.project, logger); err != nil {
			return nil, err
		}
	}
	codec, err := cursorCodec(ctx, st, cfg.cursorSecret)
	if err != nil {
		return nil, err
	}
	guard, err := cfg.guard.build(ctx, st, logger)
	if err != nil {
		return nil, err
	}
	keys := guard.keys
	if (*cfg.uploads.authAddr != "" || *cfg.ingest.addr != "") && keys == nil {
		// The upload server's authorization and the ingest listener check
		// keys whether or not the read API asks for them.
		if keys, err = guard.addVerifier(ctx, st, logger); err != nil {
			return nil, err
		}
	}
	up, err := cfg.uploads.wire(ctx, st, keys, logger)
	if err != nil {
		return nil, err
	}
	svc := &service{
		uploads:  up,
		keys:     st,
		guard:    guard,
		logger:   logger,
		webhooks: deliverer,
		streams: httpapi.NewStatusStreams(httpapi.DefaultMaxStreams, httpapi.DefaultStreamHeartbeat).
			LimitPerClient(cfg.streamsPerClient, guard.clients),
		draining: new(atomic.Bool),
		drain:    drainPolicy{delay: cfg.shutdownDelay, timeout: cfg.shutdownTimeout},
		listeners: listeners{
			api:   &listener{name: "api", addr: cfg.apiAddr},
			edge:  &listener{name: "edge", addr: cfg.edgeAddr},
			admin: &listener{name: "admin", addr: cfg.adminAddr},
		},
	}
	if *cfg.uploads.authAddr != "" {
		svc.listeners.uploadAuth = &listener{name: "upload-auth", addr: *cfg.uploads.authAddr}
	}
	if *cfg.ingest.addr != "" {
		svc.listeners.ingest = &listener{name: "ingest", addr: *cfg.ingest.addr}
	}
	// With every asset kept, a PostgreSQL store still needs its coming
	// days' partitions made, or every row would land in the default one.
	if _, partitioned := st.(cdnapi.AssetPartitioner); cfg.assetRetention > 0 || partitioned {
		svc.pruner = retention.New(st, retention.Config{Retention: cfg.assetRetention, Interval: cfg.pruneInterval, Logger: logger})
	}
	if err := svc.listeners.listen(); err != nil {
		return nil, err
	}
	// The admin listener shows metrics and profiles, and a profile costs
	// CPU: said once, at start, where an operator looks.
	if a, ok := svc.listeners.admin.l.Addr().(*net.TCPAddr); ok && !a.IP.IsLoopback() {
		logger.Warn("the admin listener is not on a loopback address: whoever reaches it reads the metrics and takes profiles; "+
			"bind --admin-addr to 127.0.0.1 or to a network only operators reach", "addr", a.String())
	}

	svc.status = health.New(st, health.Config{
		Region:        cfg.region,
		Interval:      cfg.statusInterval,
		Upload:        up.upload,
		VirusScanning: up.scanning,
		RegionProbes:  cfg.regionProbes,
		Regions:       st,
		History:       st,
		APIStatus:     guard.apiStatus,
		Logger:        logger,
		Metrics:       health.NewMetrics(registry),
	})
	svc.status.Evaluate(ctx)

	registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	registry.MustRegister(svc.status.StatusCollector())
	registry.MustRegister(guard.collectors...)
	buildinfo.Read().Register(registry)
	metrics := httpapi.NewMetrics(registry)
	// Regions are read through the probes: the lists and the status page
	// show a probed region's measured status, unless an operator's is in
	// force, and a change of it passes the page caches at once.
	var lists cdnapi.ListReader = st
	var regionsVersion func() uint64
	if len(cfg.regionProbes) > 0 {
		lists = probedLists{st, st, svc.status.ProbedRegions(st)}
		regionsVersion = svc.status.RegionsVersion
	}
	httpCfg := httpapi.Config{
		Store:          lists,
		RegionsVersion: regionsVersion,
		Cursors:        codec,
		Status:         svc.status,
		History:        st,
		// The status page refreshes as often as the statuses change.
		StatusRefresh: cfg.statusInterval,
		Project:       cfg.project,
		Logger:        logger,
		AccessLog:     accessLog,
		Metrics:       metrics,
		StoreTimeout:  cfg.storeTimeout,
		PageCacheTTL:  cfg.pageCacheTTL,
		CORSOrigins:   strings.Split(cfg.corsOrigins, ","),
		OpenAPI:       api.JSON(),
		Guard:         guard.wrap,
		Streams:       svc.streams,
		APIURL:        baseURL(svc.listeners.api.l.Addr()),
		EdgeURL:       baseURL(svc.listeners.edge.l.Addr()),
		PublicURL:     cfg.publicURL,
	}
	if cfg.publicURL != "" {
		// The pages name the API address as readers reach it.
		httpCfg.APIURL = cfg.publicURL
	}
	svc.listeners.api.srv = newServer(httpapi.NewAPI(httpCfg), logger, svc.draining)
	svc.listeners.edge.srv = newServer(httpapi.NewEdge(httpCfg), logger, svc.draining)
	svc.listeners.admin.srv = newServer(httpapi.NewAdmin(httpapi.AdminConfig{
		Store: st, Gatherer: registry, Logger: logger, AccessLog: accessLog, Metrics: metrics, Draining: svc.draining.Load,
	}), logger, svc.draining)
	if cfg.h2c {
		resets := newResetGuard(guard.clients.Trusts, logger, registry)
		resets.serveUnencryptedHTTP2(svc.listeners.api.srv)
		resets.serveUnencryptedHTTP2(svc.listeners.edge.srv)
	}
	if l := svc.listeners.uploadAuth; l != nil {
		l.srv = newServer(httpapi.NewUploadAuth(httpapi.UploadAuthConfig{
			Keys: keys, Tree: up.tree, Logger: logger, AccessLog: accessLog, Metrics: metrics,
		}), logger, svc.draining)
	}
	if l := svc.listeners.ingest; l != nil {
		h, closers, err := cfg.ingest.handler(ctx, cfg, st, keys, registry, metrics, logger, accessLog)
		if err != nil {
			for _, l := range svc.listeners.all() {
				l.l.Close()
			}
			return nil, err
		}
		l.srv = newServer(h, logger, svc.draining)
		// A batch may take --ingest-read-timeout to arrive, and its answer
		// comes only after its commit: the write deadline, which runs from
		// the request's headers, leaves the store its time after the read.
		l.srv.ReadTimeout = *cfg.ingest.readTimeout
		l.srv.WriteTimeout = *cfg.ingest.readTimeout + l.srv.WriteTimeout
		svc.closers = append(svc.closers, closers...)
	}
	return svc, nil
}

// probedLists is the store's lists with its regions read through the
// status evaluator's probes.
type probedLists struct {
	cdnapi.FileReader
	cdnapi.AssetReader
	cdnapi.RegionReader
}

// run starts the guard's background work, the status evaluator and the
// pruner, serves until ctx ends or a listener fails, then drains, and
// returns once all has stopped, the evaluator and the pruner included.
func (svc *service) run(ctx context.Context) error {
	stopGuard := svc.guard.start(ctx)
	defer stopGuard()
	// The evaluator probes the store until it has stopped, and the caller
	// closes the store once run returns: a probe still opening SQLite's
	// file after that would outlive the store's Close.
	evalCtx, stopEval := context.WithCancel(context.WithoutCancel(ctx))
	var evaluating sync.WaitGroup
	defer func() {
		stopEval()
		evaluating.Wait()
	}()
	evaluating.Go(func() { svc.status.Run(evalCtx) })
	if svc.uploads.canary != nil {
		evaluating.Go(func() { svc.uploads.canary.Run(evalCtx) })
	}
	defer svc.uploads.close(svc.keys)
	stopDeliveries := startDeliveries(ctx, svc.webhooks)
	defer stopDeliveries()

	// The pruner works in the background until shutdown begins; the caller
	// closes the store only after it has stopped.
	pruneCtx, stopPruning := context.WithCancel(context.WithoutCancel(ctx))
	var pruning sync.WaitGroup
	defer func() {
		stopPruning()
		pruning.Wait()
	}()
	if svc.pruner != nil {
		pruning.Go(func() { svc.pruner.Run(pruneCtx) })
	}

	drain := svc.drain
	drain.begin = func() {
		// Report maintenance and fail /readyz while draining, so that
		// load balancers take the process out before it closes.
		svc.draining.Store(true)
		// Streams first: browsers reconnect to the processes that stay.
		// The draining document is this process's alone, and streams it
		// woke would push it to pages, which would show the API under
		// maintenance while the fleet serves.
		svc.streams.Close()
		svc.status.SetDraining()
		stopPruning()
	}
	err := serveUntilDone(ctx, svc.logger, svc.listeners.all(), drain)
	for _, c := range svc.closers {
		c()
	}
	stopEval()
	evaluating.Wait()
	pruning.Wait()
	return err
}

// cursorCodec returns the codec for the configured secret, or for the one
// kept in the database, which every replica sharing it then agrees on.
func cursorCodec(ctx context.Context, st cdnapi.SecretKeeper, secret string) (*cdnapi.CursorCodec, error) {
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

// demoStore is what seedDemoIfEmpty needs of the store.
type demoStore interface {
	cdnapi.ListReader
	cdnapi.Transactor
}

// seedDemoIfEmpty writes the demo data when the store has no regions and the
// project no files, so that --demo never mixes demo rows into real data.
func seedDemoIfEmpty(ctx context.Context, st demoStore, project string, logger *slog.Logger) error {
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
