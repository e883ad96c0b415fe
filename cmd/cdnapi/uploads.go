package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/buildinfo"
	"github.com/cdnapi/cdnapi/internal/clamd"
	"github.com/cdnapi/cdnapi/internal/origin"
	"github.com/cdnapi/cdnapi/internal/sqlite"
	"github.com/cdnapi/cdnapi/internal/uploads"
)

const uploadsSynopsis = `uploads ROOT --clamd ADDR [--db DSN] [--workers N] [--rescan D]
        [--scan-timeout D] [--scan-timeout-per-mib D] [--metrics-addr ADDR]

Moves what the upload server (deploy/nginx/upload.conf) writes into the
origin, once ClamAV's clamd has scanned it, and keeps every project's files
list what its origin holds:

  ROOT/incoming/P/…    the upload server writes here (PUT); nothing serves it
  ROOT/staging/P/…     a file being scanned (cdnapi's own, 0700)
  ROOT/origin/P/…      scanned clean: the edges' origin and project P's files
  ROOT/quarantine/P/…  found infected (0700): logged, counted and told to
                       webhooks as file.quarantined; never served or listed

Each upload is renamed into staging, scanned there through its open file
(clamd's FILDES over a unix socket), then renamed into the origin or into
quarantine: an upload is never in the origin unscanned. A scan that cannot
finish (clamd down, or no verdict within --scan-timeout plus
--scan-timeout-per-mib for each MiB of the file) leaves the file in staging
and is retried; a stop or a crash leaves each file in incoming or staging, to
be scanned at the next start.

Each project folder of ROOT/origin is synced as origin sync --follow does.`

// uploadsConfig is what the uploads command's flags say.
type uploadsConfig struct {
	root        string
	clamd       string
	workers     int
	rescan      time.Duration
	scanTimeout time.Duration
	scanPerMiB  time.Duration
	metricsAddr string
	logFormat   string
	logLevel    string
	db          storeFlags
}

func parseUploadsConfig(env *environment, args []string) (uploadsConfig, error) {
	var c uploadsConfig
	fs := newSubcommandFlagSet("uploads", uploadsSynopsis, nil, args, env.stdout)
	c.db = addStoreFlags(fs, bulkWrites)
	fs.StringVar(&c.clamd, "clamd", "", "clamd's socket: unix:/run/clamav/clamd.ctl (Debian's), or host:port (required)")
	fs.IntVar(&c.workers, "workers", uploads.DefaultWorkers, "uploads scanned at once")
	fs.DurationVar(&c.rescan, "rescan", uploads.DefaultRescan, "look at all of incoming and staging this often, besides inotify's events")
	fs.DurationVar(&c.scanTimeout, "scan-timeout", uploads.DefaultScanTimeout,
		"give up a scan with no verdict after this long, plus --scan-timeout-per-mib a MiB; the file waits in staging and is retried (the default is clamd's MaxScanTime, 2m, and 30s)")
	fs.DurationVar(&c.scanPerMiB, "scan-timeout-per-mib", uploads.DefaultScanTimeoutPerMiB,
		"added to --scan-timeout for each MiB of the file, for the time its bytes take to reach clamd")
	fs.StringVar(&c.metricsAddr, "metrics-addr", "", "serve Prometheus metrics at http://ADDR/metrics (empty: none)")
	fs.StringVar(&c.logFormat, "log-format", "json", "log format: json or text")
	fs.StringVar(&c.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	rest, err := parseArgs(fs, args, env.getenv)
	if err != nil {
		return c, err
	}
	if len(rest) != 1 {
		return c, usageError{"uploads: want the uploads root, ROOT (see cdnapi uploads --help)"}
	}
	c.root = rest[0]
	if c.clamd == "" {
		return c, usageError{"uploads: --clamd is required: nothing is promoted unscanned (Debian's clamd listens on unix:/run/clamav/clamd.ctl)"}
	}
	if c.workers < 1 || c.rescan <= 0 {
		return c, usageError{"uploads: --workers must be at least 1 and --rescan positive"}
	}
	if c.scanTimeout <= 0 || c.scanPerMiB <= 0 {
		return c, usageError{"uploads: --scan-timeout and --scan-timeout-per-mib must be positive: a scan without a bound can hold a worker for good"}
	}
	return c, nil
}

// runUploads is the uploads command: it scans and promotes uploads, and
// syncs every project's origin, until ctx ends.
func runUploads(ctx context.Context, env *environment, args []string) error {
	cfg, err := parseUploadsConfig(env, args)
	if err != nil {
		return err
	}
	logger, err := newLogger(env.stderr, cfg.logFormat, cfg.logLevel)
	if err != nil {
		return err
	}
	ctx = sqlite.WithWaitNotice(ctx, func(msg string) { logger.Info(msg) })
	scanner, err := clamd.New(cfg.clamd)
	if err != nil {
		return usageError{"uploads: --clamd: " + err.Error()}
	}
	tree, err := uploads.OpenTree(cfg.root)
	if err != nil {
		return fmt.Errorf("uploads: %w", err)
	}
	defer tree.Close()
	st, err := cfg.db.openMigrated(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	recorder, ok := st.(cdnapi.QuarantineRecorder)
	if !ok {
		return fmt.Errorf("uploads: the %s store cannot record quarantines", st.Name())
	}

	reg := prometheus.NewRegistry()
	var metrics *uploads.Metrics
	if cfg.metricsAddr != "" {
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		buildinfo.Read().Register(reg)
		metrics = uploads.NewMetrics(reg)
		stop, err := serveMetrics(cfg.metricsAddr, reg)
		if err != nil {
			return fmt.Errorf("uploads: %w", err)
		}
		defer stop()
	}

	origins := &originSyncs{st: st, tree: tree, logger: logger}
	defer origins.wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	origins.startAll(ctx)
	gate := uploads.New(tree, uploads.Options{Scanner: scanner, Recorder: recorder, Workers: cfg.workers, Rescan: cfg.rescan,
		ScanTimeout: cfg.scanTimeout, ScanTimeoutPerMiB: cfg.scanPerMiB, Metrics: metrics, Logger: logger,
		Promoted: func(project, _ string) { origins.start(ctx, project) }})
	logger.Info("uploads: scanning", "root", tree.Root(), "clamd", scanner.Addr(),
		"scan_timeout", cfg.scanTimeout.String(), "scan_timeout_per_mib", cfg.scanPerMiB.String())
	return gate.Run(ctx)
}

// originSyncs keeps a Syncer following each project folder of the uploads
// root's origin, started as folders are found.
type originSyncs struct {
	st     origin.Store
	tree   *uploads.Tree
	logger *slog.Logger

	mu      sync.Mutex
	running map[string]bool
	wg      sync.WaitGroup
}

// startAll starts a sync of each project folder the origin holds.
func (o *originSyncs) startAll(ctx context.Context) {
	entries, err := os.ReadDir(o.tree.Dir(uploads.Origin, ""))
	if err != nil {
		o.logger.Error("uploads: cannot read the origin", "error", err)
		return
	}
	for _, e := range entries {
		if e.IsDir() && cdnapi.ValidProject(e.Name()) {
			o.start(ctx, e.Name())
		}
	}
}

// start starts the sync of project's origin folder, unless it runs.
func (o *originSyncs) start(ctx context.Context, project string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.running[project] {
		return
	}
	dir := o.tree.Dir(uploads.Origin, project)
	warn := func(msg string) { o.logger.Warn("origin: "+msg, "project", project) }
	s, err := origin.New(o.st, dir, origin.Options{Project: project, Warn: warn})
	if err != nil {
		o.logger.Error("uploads: cannot sync a project's origin", "project", project, "error", err)
		return
	}
	if o.running == nil {
		o.running = map[string]bool{}
	}
	o.running[project] = true
	o.wg.Go(func() {
		first := true
		err := s.Follow(ctx, 5*time.Minute, func(res origin.Result) {
			if first || res.Written() > 0 {
				o.logger.Info("origin: synced", "project", project, "first", first, "files", res.Files,
					"put", res.Put, "deleted", res.Deleted)
			}
			first = false
		})
		if err != nil {
			o.logger.Error("origin: the sync stopped", "project", project, "error", err)
		}
	})
	o.logger.Info("origin: following", "project", project, "folder", dir)
}

func (o *originSyncs) wait() { o.wg.Wait() }
