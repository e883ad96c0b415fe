package httpapi

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"
)

// This file writes the access log: one line per request, with what an
// operator filters on. The lines go to Config.AccessLog, which serve points
// at a buffered writer (internal/logbuf), so that logging costs no write
// system call per request.

// setKeyID records the id of the API key that authenticated the request ctx
// belongs to, for its access-log line. Never pass the key itself. It does
// nothing outside the handlers built by this package.
func setKeyID(ctx context.Context, id string) {
	if s := state(ctx); s != nil {
		s.keyID = id
	}
}

// setClientAddr records the address of the client the request ctx belongs to
// came from, for its access-log line: the guard sets it from the forwarding
// headers of a trusted proxy. Without it, the line shows the peer's IP.
func setClientAddr(ctx context.Context, addr string) {
	if s := state(ctx); s != nil {
		s.clientAddr = addr
	}
}

// recordingWriter remembers the status and size of an answer for the access
// log and the metrics.
type recordingWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *recordingWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *recordingWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	w.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *recordingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// logRequests writes one access-log line to log and one metrics observation
// per request. level is Info on the public listeners and Debug on admin,
// whose scrapes and probes would otherwise drown the log. It must be inside
// withRequest, whose request state it fills in and records the answer in.
func logRequests(log *slog.Logger, level slog.Level, m *Metrics, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		st := state(r.Context())
		st.start = start
		rw := &st.answer
		rw.ResponseWriter = w
		next.ServeHTTP(rw, r)
		logRequest(log, level, m, r, st, start)
	})
}

// logRequest writes the access-log line and the metrics observation of r,
// whose answer is done. It is a function of its own, never inlined, for its
// stack frame (the line, slog's record and attributes: about 1.5 KB): held
// by logRequests while the handlers below it run, that frame made each
// HTTP/2 request, which runs on a new goroutine with a small stack, grow and
// copy its stack (docs/performance.md: HTTP/2 and compression).
//
//go:noinline
func logRequest(log *slog.Logger, level slog.Level, m *Metrics, r *http.Request, st *requestState, start time.Time) {
	rw := &st.answer
	elapsed := time.Since(start)
	if rw.status == 0 {
		rw.status = http.StatusOK // the handler wrote nothing at all
	}
	route := st.route
	if route == "" {
		route = "unmatched"
	}
	m.observe(st.listener, route, rw.status, elapsed, st.stream)
	if !log.Enabled(r.Context(), level) {
		return
	}
	client := st.clientAddr
	if client == "" {
		client = peerIP(r.RemoteAddr)
	}
	line := accessLine{
		requestID:  st.loggedID(),
		listener:   st.listener,
		method:     r.Method,
		path:       logTarget(r.URL.Path, r.URL.RawQuery),
		route:      route,
		status:     rw.status,
		bytes:      rw.bytes,
		duration:   elapsed,
		clientAddr: client,
		userAgent:  logUserAgent(r.UserAgent()),
		keyID:      st.keyID,
	}
	// The line is stamped with the time the answer was done, as slog
	// would stamp it, without reading the clock a third time.
	end := start.Add(elapsed)
	if h, ok := log.Handler().(*accessLogHandler); ok {
		_ = h.writeRequest(end, level, &line) // as slog.Logger does, a failed write is dropped
		return
	}
	var attrs [11]slog.Attr
	rec := slog.NewRecord(end, level, "request", 0)
	rec.AddAttrs(line.attrs(&attrs)...)
	_ = log.Handler().Handle(r.Context(), rec)
}

// accessLine is the access-log line of one request.
type accessLine struct {
	requestID, listener, method, path, route string
	status                                   int
	bytes                                    int64
	duration                                 time.Duration
	clientAddr, userAgent                    string
	keyID                                    string // "" when no key authenticated the request
}

// attrs returns the attributes of l, in the order of the line, in buf. A
// request without a key has no key_id rather than an empty one.
func (l *accessLine) attrs(buf *[11]slog.Attr) []slog.Attr {
	*buf = [...]slog.Attr{
		slog.String("request_id", l.requestID),
		slog.String("listener", l.listener),
		slog.String("method", l.method),
		slog.String("path", l.path),
		slog.String("route", l.route),
		slog.Int("status", l.status),
		slog.Int64("bytes", l.bytes),
		slog.Float64("duration_seconds", l.duration.Seconds()),
		slog.String("client_addr", l.clientAddr),
		slog.String("user_agent", l.userAgent),
		slog.String("key_id", l.keyID),
	}
	if l.keyID == "" {
		return buf[:len(buf)-1]
	}
	return buf[:]
}

// The longest path-with-query and user agent an access-log line keeps, so
// that a client cannot make one line arbitrarily long.
const (
	maxLoggedTarget    = 512
	maxLoggedUserAgent = 256
)

// loggedCursor is how much of a cursor the access log keeps: enough to tell
// cursors apart when reading the log, not the whole signed token.
const loggedCursor = 12

// logTarget returns the path with its query as the access log shows it. No
// credential may reach a log line, whatever carries it, so only the values
// of the parameters the API knows are kept (limit, region, and cursors
// shortened to their first characters and "…"); every other parameter keeps
// its name and loses its value ("access_token=xxxxx"), and a name, value or
// path segment that holds an API key ("cdk_…") is replaced whole. The result
// is cut to maxLoggedTarget bytes.
func logTarget(path, rawQuery string) string {
	path = redactPath(path)
	if rawQuery == "" {
		return truncate(path, maxLoggedTarget)
	}
	var b strings.Builder
	b.WriteString(path)
	sep := byte('?')
	for pair := range strings.SplitSeq(rawQuery, "&") {
		b.WriteByte(sep)
		sep = '&'
		b.WriteString(logPair(pair))
		if b.Len() > maxLoggedTarget {
			break
		}
	}
	return truncate(b.String(), maxLoggedTarget)
}

// redacted replaces what the access log must not show.
const redacted = "xxxxx"

// logPair is one name=value pair of a query as the access log shows it.
func logPair(pair string) string {
	name, value, hasValue := strings.Cut(pair, "=")
	switch {
	case holdsKey(name) || !plainName(name):
		return redacted
	case !hasValue:
		return name
	case holdsKey(value):
		return name + "=" + redacted
	}
	switch name {
	case "limit", "region":
		return pair
	case "cursor":
		if len(value) > loggedCursor {
			return "cursor=" + value[:loggedCursor] + "…"
		}
		return pair
	}
	return name + "=" + redacted
}

// plainName reports whether a parameter name may be logged as it is: made
// of [A-Za-z0-9._-] only, as every parameter of the API is.
func plainName(name string) bool {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// redactPath replaces the segments of path that hold an API key.
func redactPath(path string) string {
	if !holdsKey(path) {
		return path
	}
	segments := strings.Split(path, "/")
	for i, s := range segments {
		if holdsKey(s) {
			segments[i] = redacted
		}
	}
	return strings.Join(segments, "/")
}

// holdsKey reports whether s may hold an API key: "cdk_" in any case, or a
// bare secret part of one (see keySecret), in s as it is or after
// percent-decoding, up to three times over ("%63dk_", "%2563dk_").
func holdsKey(s string) bool {
	for range 4 {
		if keyPrefix(s) || keySecret(s) {
			return true
		}
		d, ok := percentDecode(s)
		if !ok {
			return false
		}
		s = d
	}
	return false
}

// keyPrefix reports whether s holds "cdk_" in any case.
func keyPrefix(s string) bool {
	for i := 0; i+3 < len(s); i++ {
		if s[i]|0x20 == 'c' && s[i+1]|0x20 == 'd' && s[i+2]|0x20 == 'k' && s[i+3] == '_' {
			return true
		}
	}
	return false
}

// keySecret reports whether s holds a run of exactly 32 characters of
// [A-Za-z0-9], the shape of the secret part of a key, that is not all
// lower-case hex digits: those are a file's ID (a key's 32 random base62
// characters are all lower-case hex with a chance of 1 in 10^18).
func keySecret(s string) bool {
	n, hex := 0, true
	for i := 0; i <= len(s); i++ {
		var c byte
		if i < len(s) {
			c = s[i]
		}
		switch {
		case '0' <= c && c <= '9' || 'a' <= c && c <= 'f':
			n++
		case 'g' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
			n++
			hex = false
		default:
			if n == 32 && !hex {
				return true
			}
			n, hex = 0, true
		}
	}
	return false
}

// percentDecode decodes the %XX escapes of s, leaving a malformed one as it
// is; it reports false if s has none to decode.
func percentDecode(s string) (string, bool) {
	i := strings.IndexByte(s, '%')
	if i < 0 {
		return s, false
	}
	b := make([]byte, 0, len(s))
	b = append(b, s[:i]...)
	decoded := false
	for ; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
			decoded = true
			continue
		}
		b = append(b, s[i])
	}
	return string(b), decoded
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c|0x20 && c|0x20 <= 'f' }

func unhex(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c | 0x20 - 'a' + 10
}

// logUserAgent is the User-Agent as the access log shows it: cut to
// maxLoggedUserAgent, and replaced whole when it holds an API key.
func logUserAgent(ua string) string {
	if holdsKey(ua) {
		return redacted
	}
	return truncate(ua, maxLoggedUserAgent)
}

// truncate cuts s to at most n bytes, marking a cut with "…". It may split a
// multi-byte character; the JSON log handler writes such a byte as U+FFFD.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// peerIP returns the IP of a RemoteAddr ("host:port"), or the whole of it
// when it has no port.
func peerIP(remoteAddr string) string {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		return remoteAddr
	}
	return host
}
