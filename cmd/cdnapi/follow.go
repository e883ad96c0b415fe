package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
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

func runFollow(ctx context.Context, env *environment, args []string) error {
	fs := newSubcommandFlagSet("follow", followSynopsis, followSynopses, args, env.stdout)
	db := addStoreFlags(fs, false)
	stream := fs.String("name", "", "the log's name in the store (default: the absolute path of FILE); give each edge's log its own")
	rejects := fs.String("rejects", "", "append each invalid line, as it was read, to this file")
	metricsAddr := fs.String("metrics-addr", "", "serve Prometheus metrics at http://ADDR/metrics (empty: none)")
	batchLines := fs.Int("batch-lines", follow.DefaultBatchLines, "commit at the latest when a batch holds this many lines")
	batchInterval := fs.Duration("batch-interval", follow.DefaultBatchInterval, "commit at the latest when a batch's first line is this old")
	poll := fs.Duration("poll-interval", follow.DefaultPollInterval, "how often to look for new lines once all are read")
	once := fs.Bool("once", false, "stop once all of the log is committed, instead of waiting for more (a backfill)")
	logFormat := fs.String("log-format", "json", "log format: json or text")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn or error")
	args, err := parseArgs(fs, args, env.getenv)
	if err != nil {
		return err
	}
	logger, err := newLogger(env.stderr, *logFormat, *logLevel)
	if err != nil {
		return err
	}
	ctx = sqlite.WithWaitNotice(ctx, func(msg string) { logger.Info(msg) })
	switch {
	case len(args) == 1 && args[0] == "list":
		return listFollowed(ctx, env, db)
	case len(args) == 2 && args[0] == "forget":
		return forgetFollowed(ctx, env, db, args[1])
	case len(args) != 1:
		return usageError{"follow: want one FILE, list, or forget STREAM (see cdnapi follow --help)"}
	}
	if *batchLines <= 0 || *batchInterval <= 0 || *poll <= 0 {
		return usageError{"follow: --batch-lines, --batch-interval and --poll-interval must be positive"}
	}
	cfg := follow.Config{
		Path: args[0], Stream: *stream,
		BatchLines: *batchLines, BatchInterval: *batchInterval, PollInterval: *poll,
		StopAtEnd: *once, Logger: logger,
	}
	if *rejects != "" {
		f, err := os.OpenFile(*rejects, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
		if err != nil {
			return fmt.Errorf("follow: %w", err)
		}
		defer f.Close()
		cfg.Rejects = f
	}
	if *metricsAddr != "" {
		reg := prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		buildinfo.Read().Register(reg)
		cfg.Metrics = follow.NewMetrics(reg)
		stop, err := serveMetrics(*metricsAddr, reg)
		if err != nil {
			return fmt.Errorf("follow: %w", err)
		}
		defer stop()
	}
	st, err := db.openMigrated(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	return follow.Run(ctx, st, cfg)
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
