// Package edgelog receives the access log lines that nginx edges push over
// HTTP, through the log shippers operators run (syslog-ng's http(),
// Vector, Fluent Bit), and writes them into the assets table: what
// `cdnapi follow` does for a log on the API's machine, for edges anywhere,
// with no database credential on them.
//
// A batch is one request's body: NDJSON (the lines as nginx wrote them,
// which is what syslog-ng's http() sends by default) or a JSON array of
// them (what shippers send when told to frame a batch as JSON). Each line
// is read as follow reads it (internal/ingest's EdgeParser). Exactly once
// rests on the shipper and the asset ID: a batch is acknowledged only
// after its rows are committed, a shipper sends again what was not
// acknowledged, and a line sent twice upserts the same row, ast_ and
// nginx's $request_id.
package edgelog

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/ingest"
)

// Store is what a Receiver needs of a cdnapi.Store.
type Store interface {
	cdnapi.Transactor
	ListRegions(ctx context.Context) ([]cdnapi.Region, error)
}

// Config tunes a Receiver. Zero fields take their defaults.
type Config struct {
	// Rejects, when set, receives each invalid line of a committed batch,
	// with a newline, as follow's --rejects does. Lines of a batch that
	// is not committed are not written; the shipper sends them again.
	Rejects io.Writer
	Metrics *Metrics         // nil records nothing
	Logger  *slog.Logger     // discarded when nil
	Now     func() time.Time // time.Now when nil
}

// Counts says what became of a batch's lines.
type Counts struct {
	Lines int // every line of the batch, blank lines not counted
	// Taken lines are listed requests, written (or written again) as
	// assets.
	Taken int
	// Skipped lines are valid requests the assets list does not show
	// (errors, redirects, POST …), as follow skips them.
	Skipped int
	// Rejected lines are invalid (not the log format, longer than
	// ingest.MaxLineBytes, an unknown region) or of another region than
	// the key's; OtherRegion counts the latter among them.
	Rejected    int
	OtherRegion int
	// FirstRejection says why the first rejected line was, and which one
	// it was (1-based); "" and 0 when none was.
	FirstRejection     string
	FirstRejectionLine int
}

// regionRefresh is how often, at most, the regions are read again when a
// line names one the receiver does not know: it may have been added since.
const regionRefresh = 5 * time.Second

// Receiver parses and commits batches. It is safe for concurrent use.
type Receiver struct {
	st  Store
	cfg Config

	mu          sync.Mutex
	regions     []cdnapi.Region
	regionsRead time.Time
	parsers     sync.Pool // of *ingest.EdgeParser made from regions; emptied when they change
	version     uint64    // of regions, to tell a parser of old regions
	rejectsMu   sync.Mutex

	queue     chan *pending // batches for the committer (commit.go)
	closed    chan struct{}
	startOnce sync.Once
	closeOnce sync.Once
}

// New returns a Receiver that writes into st. It reads the regions on its
// first batch, and starts its committer then; Close stops it.
func New(st Store, cfg Config) *Receiver {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Receiver{st: st, cfg: cfg, queue: make(chan *pending), closed: make(chan struct{})}
}

// versioned is a parser and the version of the regions it was made from.
type versioned struct {
	p       *ingest.EdgeParser
	version uint64
}

// parser returns a parser of the current regions, reading them from the
// store first when they are unknown, or when stale is set and they were
// read more than regionRefresh ago.
func (r *Receiver) parser(ctx context.Context, stale bool) (versioned, error) {
	r.mu.Lock()
	need := r.regions == nil || (stale && r.cfg.Now().Sub(r.regionsRead) >= regionRefresh)
	version := r.version
	r.mu.Unlock()
	if need {
		var err error
		if version, err = r.readRegions(ctx); err != nil {
			return versioned{}, err
		}
	}
	if v, ok := r.parsers.Get().(versioned); ok && v.version == version {
		return v, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return versioned{p: ingest.NewEdgeParser(r.regions), version: r.version}, nil
}

// ReadRegions reads the regions now, rather than on the first batch, so
// that the metrics of each region exist from the start, at 0: an alert on
// their rate then needs no `or vector(0)`. Regions added later get theirs
// when a batch names them.
func (r *Receiver) ReadRegions(ctx context.Context) error {
	_, err := r.readRegions(ctx)
	return err
}

// readRegions reads the regions from the store and returns their version.
func (r *Receiver) readRegions(ctx context.Context) (uint64, error) {
	regions, err := r.st.ListRegions(ctx)
	if err != nil {
		return 0, err
	}
	if regions == nil {
		regions = []cdnapi.Region{}
	}
	for _, rg := range regions {
		r.cfg.Metrics.known(rg.Code)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.regions, r.regionsRead = regions, r.cfg.Now()
	r.version++
	return r.version, nil
}

// Receive parses body, the lines of one batch sent with an edge key of
// region, and commits the assets of its listed lines in one transaction.
// Lines of another region are rejected. It returns what became of the
// lines once they are committed, and only then. An error is the store's
// (or ctx's), and the batch is to be sent again: it was not acknowledged,
// though it may have been written with the batches it was merged with
// (commit.go), which the retry then writes again, as the same rows.
func (r *Receiver) Receive(ctx context.Context, region string, body []byte) (Counts, error) {
	var c Counts
	lines := splitLines(body)
	v, err := r.parser(ctx, false)
	if err != nil {
		return c, err
	}
	defer func() { r.parsers.Put(v) }()
	assets := make([]cdnapi.Asset, 0, len(lines))
	at := make([]time.Time, 0, len(lines))
	var rejects [][]byte
	reject := func(i int, line []byte, why string, other bool) {
		c.Rejected++
		if other {
			c.OtherRegion++
		}
		if c.FirstRejection == "" {
			c.FirstRejection, c.FirstRejectionLine = why, i+1
		}
		rejects = append(rejects, line)
	}
	refreshed := false
	for i, line := range lines {
		c.Lines++
		if len(line) > ingest.MaxLineBytes {
			reject(i, line[:ingest.MaxLineBytes], fmt.Sprintf("longer than %d bytes", ingest.MaxLineBytes), false)
			continue
		}
		req, err := v.p.Parse(line)
		if ingest.UnknownRegion(err) && !refreshed {
			// Regions are added while edges run: look again, once a batch.
			refreshed = true
			if nv, rerr := r.parser(ctx, true); rerr == nil {
				r.parsers.Put(v)
				v = nv
				req, err = v.p.Parse(line)
			}
		}
		switch {
		case err != nil:
			reject(i, line, err.Error(), false)
		case req.RefusedByNginx:
			// nginx's own 400 or 414, answered before the server block set
			// the region: any scanner makes them. Skipped, as follow skips
			// them, rather than rejected as another region's.
			c.Skipped++
		case req.Region != region:
			reject(i, line, fmt.Sprintf("region: %s; want %s, the region of this edge key", req.Region, region), true)
		case !req.Listed:
			c.Skipped++
		default:
			assets = append(assets, req.Asset)
			at = append(at, req.At)
		}
	}
	start := time.Now()
	if len(assets) > 0 {
		if err := r.commit(ctx, assets); err != nil {
			r.cfg.Metrics.storeFailed(region)
			return Counts{}, err
		}
	}
	c.Taken = len(assets)
	r.cfg.Metrics.committed(region, c, assets, time.Since(start), at, r.cfg.Now())
	if c.Rejected > 0 {
		r.cfg.Logger.Warn("edge log: rejected lines of a batch", "region", region,
			"rejected", c.Rejected, "other_region", c.OtherRegion, "lines", c.Lines,
			"first", c.FirstRejection, "first_line", c.FirstRejectionLine)
		r.writeRejects(rejects)
	}
	return c, nil
}

// rejectsChunk bounds one write to Config.Rejects. Each write holds whole
// lines (a rejected line is at most ingest.MaxLineBytes), so that a
// bounded file, which rotates before a write that would pass its bound
// (follow.RejectsFile), rotates between lines, never within one.
const rejectsChunk = ingest.MaxLineBytes + 1

// writeRejects appends the rejected lines of a committed batch to
// Config.Rejects, each batch's lines together.
func (r *Receiver) writeRejects(lines [][]byte) {
	if r.cfg.Rejects == nil {
		return
	}
	r.rejectsMu.Lock()
	defer r.rejectsMu.Unlock()
	b := make([]byte, 0, rejectsChunk)
	for i, l := range lines {
		b = append(append(b, l...), '\n')
		if i+1 < len(lines) && len(b)+len(lines[i+1])+1 <= rejectsChunk {
			continue
		}
		if _, err := r.cfg.Rejects.Write(b); err != nil {
			r.cfg.Logger.Error("edge log: cannot keep the rejected lines", "err", err)
			return
		}
		b = b[:0]
	}
}

// splitLines returns the lines of body: the elements of a JSON array when
// it is one (objects as they were sent, strings as the line they hold),
// else its lines, without blank ones and without a trailing \r. A body
// that starts with [ and is not one JSON array is read as lines: a log
// line is never an array, so its lines are each rejected or taken on
// their own, as in any NDJSON batch, rather than the whole batch refused.
func splitLines(body []byte) [][]byte {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '[' {
		if lines, ok := arrayLines(trimmed); ok {
			return lines
		}
	}
	var lines [][]byte
	for len(body) > 0 {
		line := body
		if i := bytes.IndexByte(body, '\n'); i >= 0 {
			line, body = body[:i], body[i+1:]
		} else {
			body = nil
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		lines = append(lines, line)
	}
	return lines
}

// arrayLines returns the elements of body, if it is one JSON array. An
// element that is a string is the line it holds, for shippers that send
// each message as a JSON string.
func arrayLines(body []byte) ([][]byte, bool) {
	var raw []json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, false
	}
	lines := make([][]byte, 0, len(raw))
	for _, el := range raw {
		if len(el) > 0 && el[0] == '"' {
			var s string
			if err := json.Unmarshal(el, &s); err != nil {
				return nil, false // not reached: the array is valid JSON
			}
			el = []byte(s)
		}
		lines = append(lines, el)
	}
	return lines, true
}
