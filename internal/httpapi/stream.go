package httpapi

import (
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/cdnapi/cdnapi"
)

// pathStatusStream is the live status: Server-Sent Events.
const pathStatusStream = "/api/v1/status/stream"

// The defaults of NewStatusStreams.
const (
	DefaultMaxStreams = 500
	// DefaultMaxStreamsPerClient bounds the streams of one client address
	// (an IPv6 /64), so that one client cannot hold every stream: a
	// browser opens one per tab, an office behind one NAT a few dozen.
	DefaultMaxStreamsPerClient = 20
	DefaultStreamHeartbeat     = 15 * time.Second
	// streamRetry is the reconnection delay the stream asks of browsers.
	streamRetry = time.Second
)

// StatusStreams bounds the open streams of GET /api/v1/status/stream and
// ends them when the server shuts down: a stream never ends by itself, and
// http.Server.Shutdown waits for every request to end.
type StatusStreams struct {
	slots     chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	heartbeat time.Duration

	perClient int             // the most open streams of one client address
	clients   *ClientResolver // finds it; nil believes the peer only
	mu        sync.Mutex
	open      map[string]int // open streams by client address
}

// NewStatusStreams returns the bound of max open streams (DefaultMaxStreams
// if max < 1), each sending a comment every heartbeat
// (DefaultStreamHeartbeat if not positive) so that proxies and browsers
// see the connection is alive.
func NewStatusStreams(max int, heartbeat time.Duration) *StatusStreams {
	if max < 1 {
		max = DefaultMaxStreams
	}
	if heartbeat <= 0 {
		heartbeat = DefaultStreamHeartbeat
	}
	return &StatusStreams{slots: make(chan struct{}, max), done: make(chan struct{}), heartbeat: heartbeat,
		perClient: min(DefaultMaxStreamsPerClient, max), open: map[string]int{}}
}

// LimitPerClient bounds the open streams of one client address to max
// (DefaultMaxStreamsPerClient if max < 1), the address as clients finds it
// (the peer's when clients is nil), an IPv6 one by its /64 as the rate
// limits count it. Call it before serving.
func (s *StatusStreams) LimitPerClient(max int, clients *ClientResolver) *StatusStreams {
	if max < 1 {
		max = DefaultMaxStreamsPerClient
	}
	s.perClient, s.clients = max, clients
	return s
}

// clientKey is the address a stream counts against.
func (s *StatusStreams) clientKey(r *http.Request) string {
	addr, _ := s.clients.Resolve(r)
	switch {
	case !addr.IsValid():
		return r.RemoteAddr
	case addr.Is6():
		return netip.PrefixFrom(addr, 64).Masked().String()
	}
	return addr.String()
}

// take counts a stream of client against its bound; false if it is full.
func (s *StatusStreams) take(client string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open[client] >= s.perClient {
		return false
	}
	s.open[client]++
	return true
}

func (s *StatusStreams) release(client string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open[client]--; s.open[client] <= 0 {
		delete(s.open, client)
	}
}

// Close ends every open stream and refuses new ones. Call it when draining
// begins: browsers reconnect, through the load balancer, elsewhere.
func (s *StatusStreams) Close() { s.closeOnce.Do(func() { close(s.done) }) }

// errTooManyStreams answers a stream over the bound.
var errTooManyStreams = cdnapi.Errorf(cdnapi.CodeRateLimited, "",
	"too many status streams are open; poll GET /api/v1/status instead, or retry later")

// errTooManyClientStreams answers a stream over the bound of its client.
var errTooManyClientStreams = cdnapi.Errorf(cdnapi.CodeRateLimited, "",
	"too many status streams are open from your address; close one, or poll GET /api/v1/status instead")

// handleStatusStream serves GET /api/v1/status/stream: an event "status"
// with the status document (as GET /api/v1/status has it) at once, unless
// Last-Event-ID names the current one, and then each time it changes, with
// a comment every heartbeat. The event ID is cdnapi.StatusVersion, the same
// in every process and across restarts, so a browser that resumes is sent
// a document only when it is not the one it has. Each write pushes the server's write deadline
// only as far as the next heartbeat, and the read deadline is lifted: a
// stream outlives the server's WriteTimeout and ReadTimeout, but a client
// that stops reading is cut.
func handleStatusStream(cfg Config, streams *StatusStreams) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := parseNoQuery(r.URL.RawQuery); err != nil {
			writeError(w, r, err)
			return
		}
		// Closed first: a select of both would pick at random when a slot
		// is free too.
		select {
		case <-streams.done:
			w.Header().Set("Retry-After", "1")
			writeError(w, r, errTooManyStreams)
			return
		default:
		}
		client := streams.clientKey(r)
		if !streams.take(client) {
			w.Header().Set("Retry-After", "10")
			writeError(w, r, errTooManyClientStreams)
			return
		}
		defer streams.release(client)
		select {
		case streams.slots <- struct{}{}:
			defer func() { <-streams.slots }()
		default:
			w.Header().Set("Retry-After", "10")
			writeError(w, r, errTooManyStreams)
			return
		}
		markStream(r.Context(), cfg.Metrics)
		rc := http.NewResponseController(w)
		h := w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", cacheStatus)
		h.Set("X-Accel-Buffering", "no") // nginx: pass each event on at once
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodHead {
			return
		}
		rc.SetReadDeadline(time.Time{})

		buf := make([]byte, 0, 1024)
		buf = append(buf, "retry: "...)
		buf = strconv.AppendInt(buf, streamRetry.Milliseconds(), 10)
		buf = append(buf, "\n\n"...)
		sent := r.Header.Get("Last-Event-ID")
		write := func() bool {
			rc.SetWriteDeadline(time.Now().Add(streams.heartbeat + 10*time.Second))
			if _, err := w.Write(buf); err != nil {
				return false
			}
			buf = buf[:0]
			return rc.Flush() == nil
		}
		// A stream sleeps until the evaluator publishes a document or a
		// heartbeat is due: polling each stream every 100 ms cost 500 idle
		// streams 5% of a core, waking costs them 0.1% (BenchmarkIdleStreams).
		beat := time.NewTicker(streams.heartbeat)
		defer beat.Stop()
		for {
			published := cfg.Status.Changed() // before Document: see StatusSource
			doc := cfg.Status.Document()
			if v := cdnapi.StatusVersion(doc); v != sent {
				sent = v
				buf = append(buf, "id: "+v+"\nevent: status\ndata: "...)
				buf = appendStatusDocument(buf, doc)
				buf = append(buf, "\n\n"...)
			}
			if len(buf) > 0 && !write() {
				return
			}
			select {
			case <-r.Context().Done():
				return
			case <-streams.done:
				return
			case <-beat.C:
				buf = append(buf, ": heartbeat\n\n"...)
			case <-published:
				// A drain closes the streams before it publishes its
				// document, which must not reach browsers: seen here.
				select {
				case <-streams.done:
					return
				default:
				}
			}
		}
	})
}
