package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/buildinfo"
	"github.com/cdnapi/cdnapi/internal/follow"
	"github.com/cdnapi/cdnapi/internal/sqlite"
)

// follow is a command of its own, not a flag of ingest: ingest reads the
// API's NDJSON once, in one transaction, and stops; follow reads nginx's
// own log format and never stops, committing as it goes, and it has
// positions to show and forget.
const followSynopsis = `follow [flags] FILE | follow list | follow forget STREAM  [--db DSN]

Follows the access log of an nginx edge, written in the log format of
deploy/nginx/cdnapi-log.conf, and writes each request as an asset: every GET
or HEAD answered with 2xx or 304 shows up in GET /api/v1/assets, exactly once,
within a second. Run one follower per log, where nginx runs (it reads the
file) and against the store serve uses.

It follows the file as tail -F does, across log rotation (mv and nginx -s
reopen, or copytruncate), and commits its position in the log with the rows,
in one transaction: killed at any moment, it goes on where it stopped. Lines
that are not valid are counted, written to --rejects, and skipped.`

var followSynopses = map[string]string{
	"list": `follow list  [--db DSN]

Lists every followed log: its stream, the file and offset committed, the lines
committed, the time of the newest request, and how long ago that was (lag).`,
	"forget": `follow forget STREAM  [--db DSN]

Forgets a log's position, so that the next follower of it starts at the
beginning of its current file. Stop the follower first.`,
}

// followConfig is what follow's arguments and their CDNAPI_* variables say.
type followConfig struct {
	verb          string // follow (a FILE), list or forget
	arg           string // follow's FILE, or forget's STREAM
	stream        string
	rejects       string
	rejectsMiB    int64
	metricsAddr   string
	batchLines    int
	batchInterval time.Duration
	poll          time.Duration
	once          bool
	logFormat     string
	logLevel      string
	db            storeFlags
}

// parseFollowConfig parses follow's arguments and checks them.
func parseFollowConfig(env *environment, args []string) (followConfig, error) {
	var c followConfig
	fs := newSubcommandFlagSet("follow", followSynopsis, followSynopses, args, env.stdout)
	c.db = addStoreFlags(fs, bulkWrites)
	fs.StringVar(&c.stream, "name", "", "the log's name in the store (default: the absolute path of FILE); give each edge's log its own")
	fs.StringVar(&c.rejects, "rejects", "", "append each invalid line, as it was read, to this file")
	fs.Int64Var(&c.rejectsMiB, "rejects-max-mib", 100, "the --rejects file's bound in MiB: past it the file is renamed FILE.1 (replacing the one before) and a new one begun, so rejects take at most twice this")
	fs.StringVar(&c.metricsAddr, "metrics-addr", "", "serve Prometheus metrics at http://ADDR/metrics (empty: none)")
	fs.IntVar(&c.batchLines, "batch-lines", follow.DefaultBatchLines, "commit at the latest when a batch holds this many lines")
	fs.DurationVar(&c.batchInterval, "batch-interval", follow.DefaultBatchInterval, "commit at the latest when a batch's first line is this old")
	fs.DurationVar(&c.poll, "poll-interval", follow.DefaultPollInterval, "how often to look for new lines once all are read")
	fs.BoolVar(&c.once, "once", false, "stop once all of the log is committed, instead of waiting for more (a backfill)")
	fs.StringVar(&c.logFormat, "log-format", "json", "log format: json or text")
	fs.StringVar(&c.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	args, err := parseArgs(fs, args, env.getenv)
	if err != nil {
		return c, err
	}
	if _, err := newLogger(io.Discard, c.logFormat, c.logLevel); err != nil {
		return c, err
	}
	switch {
	case len(args) == 1 && args[0] == "list":
		c.verb = "list"
		return c, nil
	case len(args) == 2 && args[0] == "forget":
		c.verb, c.arg = "forget", args[1]
		return c, nil
	case len(args) != 1:
		return c, usageError{"follow: want one FILE, list, or forget STREAM (see cdnapi follow --help)"}
	}
	c.verb, c.arg = "follow", args[0]
	if c.rejectsMiB <= 0 {
		return c, usageError{"follow: --rejects-max-mib must be positive"}
	}
	if c.batchLines <= 0 || c.batchInterval <= 0 || c.poll <= 0 {
		return c, usageError{"follow: --batch-lines, --batch-interval and --poll-interval must be positive"}
	}
	if abs, ok := isDirectory(c.arg); ok {
		return c, usageError{fmt.Sprintf("follow: %s is a directory; give the path of the access log nginx writes", abs)}
	}
	if _, err := os.Stat(c.arg); c.once && errors.Is(err, os.ErrNotExist) {
		abs, _ := filepath.Abs(c.arg)
		return c, usageError{fmt.Sprintf("follow: no log at %s; --once reads a log that is there (without --once, follow waits for it)", abs)}
	}
	if err := c.db.checkNotDirectory(); err != nil {
		return c, err
	}
	return c, nil
}

// runFollow is the follow command: it follows a log, or lists or forgets
// the positions of those followed.
func runFollow(ctx context.Context, env *environment, args []string) error {
	cfg, err := parseFollowConfig(env, args)
	if err != nil {
		return err
	}
	logger, err := newLogger(env.stderr, cfg.logFormat, cfg.logLevel)
	if err != nil {
		return err
	}
	ctx = sqlite.WithWaitNotice(ctx, func(msg string) { logger.Info(msg) })
	switch cfg.verb {
	case "list":
		return listFollowed(ctx, env, cfg.db)
	case "forget":
		return forgetFollowed(ctx, env, cfg.db, cfg.arg)
	}
	return cfg.follow(ctx, logger)
}

// follow follows the log c names until ctx ends or, with --once, all of
// it is committed.
func (c followConfig) follow(ctx context.Context, logger *slog.Logger) error {
	cfg := follow.Config{
		Path: c.arg, Stream: c.stream,
		BatchLines: c.batchLines, BatchInterval: c.batchInterval, PollInterval: c.poll,
		StopAtEnd: c.once, Logger: logger,
	}
	if c.rejects != "" {
		f, err := follow.OpenRejects(c.rejects, c.rejectsMiB<<20)
		if err != nil {
			return fmt.Errorf("follow: %w", err)
		}
		defer f.Close()
		cfg.Rejects = f
	}
	if c.metricsAddr != "" {
		metrics, stop, err := serveFollowMetrics(c.metricsAddr)
		if err != nil {
			return fmt.Errorf("follow: %w", err)
		}
		defer stop()
		cfg.Metrics = metrics
	}
	st, err := c.db.openMigrated(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	return follow.Run(ctx, st, cfg)
}

// serveFollowMetrics serves a follower's metrics, with the process's and
// the build's, at http://addr/metrics until stop is called.
func serveFollowMetrics(addr string) (_ *follow.Metrics, stop func(), err error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	buildinfo.Read().Register(reg)
	metrics := follow.NewMetrics(reg)
	stop, err = serveMetrics(addr, reg)
	return metrics, stop, err
}

// serveMetrics serves reg at http://addr/metrics until stop is called.
func serveMetrics(addr string, reg *prometheus.Registry) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, WriteTimeout: 30 * time.Second}
	go srv.Serve(ln)
	return func() { srv.Close() }, nil
}

func listFollowed(ctx context.Context, env *environment, db storeFlags) error {
	st, err := db.openMigrated(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	positions, err := st.LogPositions(ctx)
	if err != nil {
		return fmt.Errorf("follow list: %w", err)
	}
	printPositions(env.stdout, positions, time.Now())
	return nil
}

func printPositions(w io.Writer, positions []cdnapi.LogPosition, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STREAM\tFILE\tINODE\tOFFSET\tLINES\tNEWEST REQUEST\tLAG\tCOMMITTED")
	for _, p := range positions {
		newest, lag := "-", "-"
		if !p.NewestAt.IsZero() {
			newest = cdnapi.Timestamp(p.NewestAt)
			lag = now.Sub(p.NewestAt).Round(time.Millisecond).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\n", p.Stream, p.Path, p.Inode, p.Offset, p.Lines,
			newest, lag, cdnapi.Timestamp(p.UpdatedAt))
	}
	tw.Flush()
}

func forgetFollowed(ctx context.Context, env *environment, db storeFlags, stream string) error {
	st, err := db.openMigrated(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.DeleteLogPosition(ctx, stream); err != nil {
		if errors.Is(err, cdnapi.ErrNotFound) {
			return fmt.Errorf("follow forget: no log named %q is followed (see cdnapi follow list)", stream)
		}
		return fmt.Errorf("follow forget: %w", err)
	}
	fmt.Fprintf(env.stdout, "forgot the position of %s\n", stream)
	return nil
}
