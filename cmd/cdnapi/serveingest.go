package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/api"
	"github.com/cdnapi/cdnapi/internal/edgelog"
	"github.com/cdnapi/cdnapi/internal/follow"
	"github.com/cdnapi/cdnapi/internal/httpapi"
	"github.com/cdnapi/cdnapi/internal/ratelimit"
)

// defaultIngestReadTimeout is the time a batch may take to arrive: the
// other listeners' 10 s would cut the shipped config's 8 MiB batches on a
// link under 7 Mbit/s, an edge catching up over a slow uplink, for good,
// since the same batch is sent again. A minute carries them at 1.2 Mbit/s
// and 16 MiB ones (--ingest-max-batch-bytes) at 2.3; a client that stalls
// holds one connection that long, which the rate limit and the commit
// slots, not the read, bound.
const defaultIngestReadTimeout = time.Minute

// ingestFlags are serve's flags of the ingest listener, where edges' log
// shippers send their lines (README: Edges anywhere).
type ingestFlags struct {
	addr          *string
	maxBatchBytes *int64
	rateLimit     *int
	rateBurst     *int
	rejects       *string
	rejectsMiB    *int64
	readTimeout   *time.Duration
}

func addIngestFlags(fs *flag.FlagSet) ingestFlags {
	return ingestFlags{
		addr: fs.String("ingest-addr", "", "address of the ingest listener, where edges' log shippers POST their lines to "+
			httpapi.EdgeLogsPath+" with an edge key (default: off)"),
		maxBatchBytes: fs.Int64("ingest-max-batch-bytes", httpapi.DefaultMaxBatchBytes, "largest batch the ingest listener takes, as sent and decoded; larger ones get 413"),
		rateLimit:     fs.Int("ingest-rate-limit", 0, "batches per second allowed to each edge key on average; 0: no limit"),
		rateBurst:     fs.Int("ingest-rate-burst", 0, "batches an edge key may send at once (default: twice --ingest-rate-limit)"),
		rejects:       fs.String("ingest-rejects", "", "append each rejected line of a committed batch to this file, as follow --rejects does"),
		readTimeout: fs.Duration("ingest-read-timeout", defaultIngestReadTimeout, "time a batch's request may take to arrive whole, "+
			"headers and body; one cut short gets 503 body_incomplete and is sent again, so a link too slow for it never gets a batch through"),
		rejectsMiB: fs.Int64("ingest-rejects-max-mib", 100, "the --ingest-rejects file's bound in MiB: past it the file is renamed FILE.1 (replacing the one before) "+
			"and a new one begun, so rejects take at most twice this, whatever the edges send"),
	}
}

func (f ingestFlags) validate() error {
	switch {
	case *f.addr == "" && (*f.rateLimit != 0 || *f.rateBurst != 0 || *f.rejects != ""):
		return usageError{"--ingest-rate-limit, --ingest-rate-burst and --ingest-rejects need --ingest-addr"}
	case *f.readTimeout <= 0:
		return usageError{"--ingest-read-timeout must be positive"}
	case *f.rejectsMiB <= 0:
		return usageError{"--ingest-rejects-max-mib must be positive"}
	case *f.maxBatchBytes <= 0:
		return usageError{"--ingest-max-batch-bytes must be positive"}
	case *f.rateLimit < 0 || *f.rateBurst < 0:
		return usageError{"--ingest-rate-limit and --ingest-rate-burst must not be negative"}
	case *f.rateLimit == 0 && *f.rateBurst > 0:
		return usageError{"--ingest-rate-burst needs --ingest-rate-limit"}
	}
	return nil
}

// handler returns the ingest listener's handler, writing into st; closers
// are to run once it has stopped.
func (f ingestFlags) handler(ctx context.Context, cfg serveConfig, st edgelog.Store, keys httpapi.KeyVerifier, reg prometheus.Registerer,
	metrics *httpapi.Metrics, logger, accessLog *slog.Logger) (_ http.Handler, closers []func() error, err error) {
	rcfg := edgelog.Config{Metrics: edgelog.NewMetrics(reg), Logger: logger}
	if *f.rejects != "" {
		// Edges, the least trusted machines, choose what lands in this
		// file: it is bounded and rotated as follow's is.
		file, err := follow.OpenRejects(*f.rejects, *f.rejectsMiB<<20)
		if err != nil {
			return nil, nil, fmt.Errorf("--ingest-rejects: %w", err)
		}
		rcfg.Rejects = file
		closers = append(closers, file.Close)
	}
	var limiter cdnapi.RateLimiter
	if rate := *f.rateLimit; rate > 0 {
		burst := *f.rateBurst
		if burst == 0 {
			burst = 2 * rate
		}
		limiter = ratelimit.NewMemory(ratelimit.Policy{Rate: rate, Burst: burst})
	}
	receiver := edgelog.New(st, rcfg)
	// The regions now, so that their metrics exist at 0 from the start; a
	// store that cannot answer yet leaves them to the first batch.
	rctx, cancel := context.WithTimeout(ctx, max(cfg.storeTimeout, ingestStoreTimeout))
	if err := receiver.ReadRegions(rctx); err != nil {
		logger.Warn("ingest: regions not read at start; the first batch reads them", "err", err)
	}
	cancel()
	closers = append([]func() error{receiver.Close}, closers...) // the committer first: it may write rejects
	return httpapi.NewIngest(httpapi.IngestConfig{
		Keys: keys, Receiver: receiver, Limiter: limiter,
		MaxBatchBytes: *f.maxBatchBytes, StoreTimeout: max(cfg.storeTimeout, ingestStoreTimeout),
		Logger: logger, AccessLog: accessLog, Metrics: metrics, OpenAPI: api.IngestJSON(),
	}), closers, nil
}

// ingestStoreTimeout is the least time a batch may wait for its turn and
// its commit: a commit of thousands of rows takes longer than a read, and
// a shipper's timeout (syslog-ng's default is none) is the bound that
// matters. A batch past it gets 503 and is sent again.
const ingestStoreTimeout = 10 * time.Second
