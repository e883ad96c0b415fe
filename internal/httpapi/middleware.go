package httpapi

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"path"
	"runtime/debug"
	"time"
)

// requestState is what the middleware learns about one request and shares
// with the layers below it. It travels in the request context as a pointer,
// so that the route, which only the mux knows, reaches the access log that
// wraps the mux.
type requestState struct {
	id       string
	listener string
	route    string // the pattern that matched; set by the mux's route wrapper
	// stream is set by a handler that answers with a stream (see
	// markStream), which the metrics time apart from the requests.
	stream bool
	log    *slog.Logger
	// keyID and clientAddr are set by the guard (see setKeyID and
	// setClientAddr) for the access log; clientAddr "" means the peer's IP.
	keyID      string
	clientAddr string
	// project is the project of the request's API key, set by the guard
	// (see setKeyProject); "" when there is none.
	project string
	// private makes the answer of a request with a key private (see
	// privateAnswer); here so that it costs no allocation of its own.
	private privateWriter
	// start is when the access log began timing the request: the guard
	// judges keys and buckets at that time rather than read the clock again.
	start time.Time
	// answer records the status and size of the answer for the access log
	// and recoverPanics; idHeader is the value of X-Request-Id. Both live
	// here so that a request costs one allocation for its state, not three.
	answer   recordingWriter
	idHeader [1]string
}

// requestTime returns the time the request of ctx started, or now outside
// the handlers built by this package.
func requestTime(ctx context.Context) time.Time {
	if s := state(ctx); s != nil && !s.start.IsZero() {
		return s.start
	}
	return time.Now()
}

type stateKey struct{}

// state returns the requestState of ctx, or nil outside the middleware.
func state(ctx context.Context) *requestState {
	s, _ := ctx.Value(stateKey{}).(*requestState)
	return s
}

// requestID returns the ID of the request ctx belongs to: the client's
// X-Request-Id when it was sane, else a generated "req_…". It is "" outside
// the handlers built by this package.
func requestID(ctx context.Context) string {
	if s := state(ctx); s != nil {
		return s.id
	}
	return ""
}

// loggedRequestID is requestID as log lines show it: a client's ID that
// holds an API key (see holdsKey) is kept in the answer, as API.md says,
// and never logged.
func loggedRequestID(ctx context.Context) string {
	if s := state(ctx); s != nil {
		return s.loggedID()
	}
	return ""
}

func (s *requestState) loggedID() string {
	if holdsKey(s.id) {
		return redacted
	}
	return s.id
}

// logger returns the logger of the request ctx belongs to.
func logger(ctx context.Context) *slog.Logger {
	if s := state(ctx); s != nil {
		return s.log
	}
	return slog.New(slog.DiscardHandler)
}

// withProject returns ctx with project as the project of its API key, in
// the request state, which is the one place the project travels: the guard
// sets it there, the files list reads it. Outside the middleware (a test
// calling a handler directly) it gives ctx a state of its own.
func withProject(ctx context.Context, project string) context.Context {
	if s := state(ctx); s != nil {
		s.project = project
		return ctx
	}
	return context.WithValue(ctx, stateKey{}, &requestState{project: project})
}

// projectFrom returns the project of the request's API key, and whether
// it has one.
func projectFrom(ctx context.Context) (string, bool) {
	if s := state(ctx); s != nil && s.project != "" {
		return s.project, true
	}
	return "", false
}

// The security headers of API.md. jsonCSP forbids a JSON answer from being
// rendered as a document or framed, should a browser ever try.
const jsonCSP = "default-src 'none'; frame-ancestors 'none'"

// Header values that many answers carry, shared by them so that setting one
// (h[key] = value, with the key in canonical form) allocates nothing. net/http
// only reads them; each has length and capacity 1, so an Add to the same key
// copies before it appends, and Set replaces the slice.
var (
	nosniffValue        = []string{"nosniff"}
	jsonCSPValue        = []string{jsonCSP}
	contentTypeJSON     = []string{"application/json"}
	varyAcceptEncoding  = []string{"Accept-Encoding"}
	contentEncodingGzip = []string{"gzip"}
	corsAnyOriginValue  = []string{"*"}
	corsExposeValue     = []string{corsExposeHeaders}
)

// withRequest is the outermost layer of every listener. It gives the request
// its ID and state, and sets the headers every answer carries: X-Request-Id,
// nosniff and, on the public listeners, the JSON CSP (HTML pages replace it
// with their own) and CORS.
func withRequest(listener string, log *slog.Logger, cors *corsPolicy, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		if !saneRequestID(id) {
			id = newRequestID()
		}
		st := &requestState{id: id, listener: listener, log: log}
		st.idHeader[0] = id
		h := w.Header()
		h["X-Request-Id"] = st.idHeader[:] // length and capacity 1, as nosniffValue
		h["X-Content-Type-Options"] = nosniffValue
		if cors != nil {
			h["Content-Security-Policy"] = jsonCSPValue
			cors.setHeaders(h, r)
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), stateKey{}, st)))
	})
}

// saneRequestID reports whether a client's X-Request-Id may be kept: 1 to
// 64 of [A-Za-z0-9._-], so it can go into headers, bodies and logs as is.
func saneRequestID(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// newRequestID returns "req_" and 20 random base62 characters (119 bits).
// The bits come from math/rand/v2, whose generator is seeded by the system
// and far cheaper per call than crypto/rand: a request ID must not repeat,
// and is no secret.
func newRequestID() string {
	var id [4 + 20]byte
	copy(id[:], "req_")
	for i := 4; i < len(id); {
		// Six bits at a time; dropping 62 and 63 keeps every character
		// equally likely.
		x := rand.Uint64()
		for range 10 {
			if c := x & 63; c < 62 && i < len(id) {
				id[i] = base62[c]
				i++
			}
			x >>= 6
		}
	}
	return string(id[:])
}

// recoverPanics turns a panic below it into a logged 500 internal_error, so
// one bad request cannot take the listener's connection handling with it.
// Below logRequests, it learns whether the answer has begun from the
// recorder logRequests passes down.
func recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rw, ok := w.(*recordingWriter)
		if !ok {
			rw = &recordingWriter{ResponseWriter: w}
		}
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v) // the server's own signal to drop the connection
			}
			logger(r.Context()).LogAttrs(r.Context(), slog.LevelError, "panic",
				slog.String("request_id", loggedRequestID(r.Context())),
				slog.String("panic", fmt.Sprint(v)),
				slog.String("stack", string(debug.Stack())))
			if rw.status != 0 {
				// The answer has begun; the best left to do is to cut it
				// short so the client sees it is incomplete.
				panic(http.ErrAbortHandler)
			}
			writeError(rw, r, errInternal)
		}()
		next.ServeHTTP(rw, r)
	})
}

// refuseUncleanPaths answers 404 to paths that net/http's ServeMux would
// otherwise redirect to their cleaned form with a text body: every answer of
// the public listeners is JSON, and no client of this API sends such paths.
//
// OPTIONS * (the server's options, not a resource's) answers 204 with the
// methods every resource allows, as the contract answers OPTIONS.
func refuseUncleanPaths(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.RequestURI == "*" && r.Method == http.MethodOptions {
			w.Header().Set("Allow", "GET, HEAD, OPTIONS")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if p := r.URL.Path; p == "" || p != cleanPath(p) {
			writeError(w, r, errNoSuchPath)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// cleanPath is ServeMux's canonical form of a path: rooted, with . and ..
// resolved and duplicate slashes removed, keeping one trailing slash.
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	if p[0] != '/' {
		p = "/" + p
	}
	np := path.Clean(p)
	if p[len(p)-1] == '/' && np != "/" {
		np += "/"
	}
	return np
}

// named records the route pattern of the requests h serves, for the access
// log and the metrics.
func named(pattern string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if st := state(r.Context()); st != nil {
			st.route = pattern
		}
		h.ServeHTTP(w, r)
	})
}

// markStream records that the request of ctx is answered with a stream
// (Server-Sent Events), open from now until its handler returns: m counts
// it open, and times it apart from the requests, whose latency quantiles
// an hour-long stream would drag into +Inf.
func markStream(ctx context.Context, m *Metrics) {
	if s := state(ctx); s != nil && !s.stream {
		s.stream = true
		m.streamOpened(s.listener, s.route)
	}
}
