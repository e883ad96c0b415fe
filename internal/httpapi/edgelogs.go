package httpapi

import (
	"compress/gzip"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/edgelog"
)

// EdgeLogsPath is where edges' log shippers POST their batches, on the
// ingest listener. It is a collection of the API's shape (/api/v1/…),
// named for what is sent: the edges' log lines.
const EdgeLogsPath = "/api/v1/edge-logs"

// The bounds of the ingest listener's defaults.
const (
	// DefaultMaxBatchBytes bounds a batch's body, as sent and once
	// decoded: syslog-ng's batches are a few hundred KiB to a few MiB
	// (batch-lines × ~250 bytes a line); 16 MiB holds 60,000 lines.
	DefaultMaxBatchBytes = 16 << 20
	// DefaultMaxCommits bounds the batches committing at once; the others
	// wait for a turn within the store timeout, then get 503.
	DefaultMaxCommits = 4
)

// EdgeLogReceiver commits batches of edge log lines (internal/edgelog's
// Receiver).
type EdgeLogReceiver interface {
	Receive(ctx context.Context, region string, body []byte) (edgelog.Counts, error)
}

// IngestConfig configures NewIngest.
type IngestConfig struct {
	Keys     KeyVerifier     // the API keys; required
	Receiver EdgeLogReceiver // required
	// Limiter, when set, limits the batches of each key (not its lines:
	// a shipper's batches grow when it is behind, and must).
	Limiter       cdnapi.RateLimiter
	MaxBatchBytes int64         // DefaultMaxBatchBytes when 0
	MaxCommits    int           // DefaultMaxCommits when 0
	StoreTimeout  time.Duration // bound of a batch's wait and commit; 10 s when 0
	Logger        *slog.Logger  // internal errors; discarded if nil
	AccessLog     *slog.Logger  // one line per request (info); Logger if nil
	Metrics       *Metrics      // nil records nothing
	// OpenAPI is the ingest address's document (api.IngestJSON), served
	// at /api/v1/openapi.json; nil serves none.
	OpenAPI []byte
}

// The ingest listener's errors that do not depend on the request.
var (
	errEdgeScope = cdnapi.Errorf(cdnapi.CodePermissionDenied, "",
		"this API key cannot send edge logs: they need an edge key of the edge's region (cdnapi keys create --scope edge --region CODE)")
	errEdgeNoRegion = cdnapi.Errorf(cdnapi.CodePermissionDenied, "",
		"this edge key is bound to no region: make one with cdnapi keys create --scope edge --region CODE")
	errEdgeMethod = cdnapi.Errorf(cdnapi.CodeMethodNotAllowed, "",
		"this endpoint answers only POST, with a batch of edge log lines")
	errEncoding = cdnapi.Errorf(cdnapi.CodeEncodingUnsupported, "",
		"Content-Encoding must be gzip, zstd or none")
	errBodyIncomplete = cdnapi.Errorf(cdnapi.CodeBodyIncomplete, "",
		"the batch did not arrive whole (the connection was cut, or the body took longer than the read timeout) and nothing of it was written: send it again")
)

// NewIngest returns the handler of the ingest listener: POST EdgeLogsPath
// with an edge key takes a batch of that edge's log lines, and answers 200
// with what became of them only once they are committed. A batch the store
// cannot commit in time gets 503 with Retry-After, and the shipper sends
// it again; a line sent twice is one row.
//
// The body is read whole, within MaxBatchBytes, before the store is asked
// for anything, so a slow client holds a connection, never the store's
// writer; at most MaxCommits batches commit at once.
func NewIngest(cfg IngestConfig) http.Handler {
	if cfg.Keys == nil || cfg.Receiver == nil {
		panic("httpapi: NewIngest needs Keys and Receiver")
	}
	if cfg.MaxBatchBytes <= 0 {
		cfg.MaxBatchBytes = DefaultMaxBatchBytes
	}
	if cfg.MaxCommits <= 0 {
		cfg.MaxCommits = DefaultMaxCommits
	}
	if cfg.StoreTimeout <= 0 {
		cfg.StoreTimeout = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.AccessLog == nil {
		cfg.AccessLog = cfg.Logger
	}
	ing := &ingestHandler{cfg: cfg, turns: make(chan struct{}, cfg.MaxCommits)}
	mux := http.NewServeMux()
	mux.Handle(EdgeLogsPath, named(EdgeLogsPath, ing))
	if cfg.OpenAPI != nil {
		doc := cfg.OpenAPI
		mux.Handle("GET /api/v1/openapi.json", named("/api/v1/openapi.json", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h := w.Header()
			h.Set("Content-Type", "application/json")
			h.Set("Cache-Control", "public, max-age=300")
			h.Set("Content-Length", strconv.Itoa(len(doc)))
			w.Write(doc)
		})))
	}
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, notFound("the ingest address serves only POST "+EdgeLogsPath))
	}))
	h := recoverPanics(mux)
	h = logRequests(cfg.AccessLog, slog.LevelInfo, cfg.Metrics, h)
	return withRequest("ingest", cfg.Logger, nil, h)
}

type ingestHandler struct {
	cfg   IngestConfig
	turns chan struct{} // a token per batch committing
}

func (ing *ingestHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, r, errEdgeMethod)
		return
	}
	id, err := ing.identify(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if st := state(r.Context()); st != nil {
		st.keyID, st.project = id.ID, id.Project
	}
	if l := ing.cfg.Limiter; l != nil {
		d := l.Take(r.Context(), "edge-logs "+id.ID, requestTime(r.Context()))
		if d.Limited && !d.Allowed {
			w.Header().Set("Retry-After", strconv.Itoa(max(ceilSeconds(d.RetryAfter), 1)))
			writeError(w, r, errRateLimited)
			return
		}
	}
	body, err := ing.readBody(w, r)
	if err != nil {
		writeError(w, r, err)
		return
	}

	ctx, cancel := context.WithTimeout(r.Context(), ing.cfg.StoreTimeout)
	defer cancel()
	select {
	case ing.turns <- struct{}{}:
		defer func() { <-ing.turns }()
	case <-ctx.Done():
		// Batches wait for a turn longer than the store timeout: the store
		// is behind. The shipper keeps the batch and sends it again.
		writeError(w, r, errStorageUnavailable)
		return
	}
	counts, err := ing.cfg.Receiver.Receive(ctx, id.Region, body)
	if err != nil {
		writeError(w, r, storeError(r, err))
		return
	}
	out := appendBatchAnswer(nil, counts)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(http.StatusOK)
	w.Write(out)
}

// identify returns the identity of the request's edge key, or the error
// to answer: 401 without a valid key, 403 for a key of another scope.
func (ing *ingestHandler) identify(r *http.Request) (cdnapi.KeyIdentity, error) {
	authz := r.Header.Values("Authorization")
	switch {
	case len(authz) > 1:
		return cdnapi.KeyIdentity{}, errTwoCredentials
	case len(authz) == 0:
		return cdnapi.KeyIdentity{}, errAuthRequired
	}
	id, err := verifyBearer(ing.cfg.Keys, authz[0], requestTime(r.Context()))
	switch {
	case err != nil:
		return id, err
	case id.Scope != cdnapi.ScopeEdge:
		return id, errEdgeScope
	case id.Region == "":
		return id, errEdgeNoRegion
	}
	return id, nil
}

// readBody reads the whole body, decoded, within MaxBatchBytes as sent
// and as decoded (a small gzip body can decode to gigabytes). A body that
// did not arrive whole is errBodyIncomplete, whatever the decoder made of
// its cut end, so that the shipper sends it again rather than drop it.
func (ing *ingestHandler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	limit := ing.cfg.MaxBatchBytes
	tooLarge := cdnapi.Errorf(cdnapi.CodeBodyTooLarge, "",
		"a batch must be at most %d bytes, sent and decoded: send smaller batches (syslog-ng: batch-bytes)", limit)
	if r.ContentLength > limit {
		return nil, tooLarge
	}
	wire := &wireReader{r: r.Body}
	data, err := decodeBody(http.MaxBytesReader(w, io.NopCloser(wire), limit), r.Header.Get("Content-Encoding"), limit)
	if err != nil && wire.err != nil {
		return nil, errBodyIncomplete
	}
	if err != nil {
		return nil, bodyError(err, tooLarge)
	}
	if int64(len(data)) > limit {
		return nil, tooLarge
	}
	return data, nil
}

// wireReader is a request's body that keeps the error of the connection
// under it: a read timeout, or io.ErrUnexpectedEOF for a body cut short
// of its Content-Length or its last chunk.
type wireReader struct {
	r   io.Reader
	err error
}

func (w *wireReader) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	if err != nil && err != io.EOF {
		w.err = err
	}
	return n, err
}

// decodeBody reads body, decoded as encoding says, up to limit+1 bytes.
func decodeBody(body io.Reader, encoding string, limit int64) ([]byte, error) {
	switch strings.ToLower(strings.TrimSpace(encoding)) {
	case "", "identity":
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(body)
		if err != nil {
			return nil, err
		}
		body = zr
	case "zstd":
		zr, err := zstd.NewReader(body, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(limit)))
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		body = zr
	default:
		return nil, errEncoding
	}
	return io.ReadAll(io.LimitReader(body, limit+1))
}

// bodyError is the error to answer for a body that arrived whole and could
// not be read: tooLarge past the limit, errEncoding for an unknown coding,
// else a 400 that says the coding is broken.
func bodyError(err error, tooLarge *cdnapi.Error) error {
	if errors.Is(err, errEncoding) {
		return errEncoding
	}
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok || errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) {
		return tooLarge
	}
	return cdnapi.Errorf(cdnapi.CodeParameterInvalid, "",
		"the body could not be read or decoded as its Content-Encoding says: send it whole, encoded as that header names")
}

// appendBatchAnswer appends the answer to a committed batch:
// {"object":"edge_log_batch","lines":…,"taken":…,"skipped":…,
// "rejected":…,"rejected_other_region":…,"first_rejection":{…}|null}.
func appendBatchAnswer(b []byte, c edgelog.Counts) []byte {
	b = append(b, `{"object":"edge_log_batch","lines":`...)
	b = strconv.AppendInt(b, int64(c.Lines), 10)
	b = append(b, `,"taken":`...)
	b = strconv.AppendInt(b, int64(c.Taken), 10)
	b = append(b, `,"skipped":`...)
	b = strconv.AppendInt(b, int64(c.Skipped), 10)
	b = append(b, `,"rejected":`...)
	b = strconv.AppendInt(b, int64(c.Rejected), 10)
	b = append(b, `,"rejected_other_region":`...)
	b = strconv.AppendInt(b, int64(c.OtherRegion), 10)
	b = append(b, `,"first_rejection":`...)
	if c.FirstRejection == "" {
		b = append(b, "null"...)
	} else {
		b = append(b, `{"line":`...)
		b = strconv.AppendInt(b, int64(c.FirstRejectionLine), 10)
		b = append(b, `,"reason":`...)
		b = appendString(b, c.FirstRejection)
		b = append(b, '}')
	}
	return append(b, "}\n"...)
}
