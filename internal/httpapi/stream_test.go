package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/health"
)

// sseEvent is one event of a stream, or a comment when comment is set.
type sseEvent struct {
	id, event, data, comment string
}

// sseReader reads a text/event-stream as the HTML standard parses it
// (fields up to the blank line; lines starting with ':' are comments).
type sseReader struct {
	res    *http.Response
	events chan sseEvent
	cancel func() // closes the stream
}

func openStream(t *testing.T, url string, lastID string) *sseReader {
	t.Helper()
	if lastID != "" {
		return openStreamWith(t, url, "Last-Event-ID", lastID)
	}
	return openStreamWith(t, url)
}

// openStreamWith opens a stream with the header's name and value pairs.
func openStreamWith(t *testing.T, url string, header ...string) *sseReader {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+pathStatusStream, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	s := &sseReader{res: res, events: make(chan sseEvent, 100), cancel: cancel}
	if res.StatusCode != 200 {
		return s
	}
	go func() {
		defer close(s.events)
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(nil, 1<<20)
		var e sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if e != (sseEvent{}) {
					s.events <- e
				}
				e = sseEvent{}
			case strings.HasPrefix(line, ":"):
				s.events <- sseEvent{comment: strings.TrimSpace(line[1:])}
			default:
				k, v, _ := strings.Cut(line, ":")
				v = strings.TrimPrefix(v, " ")
				switch k {
				case "id":
					e.id = v
				case "event":
					e.event = v
				case "data":
					e.data += v
				case "retry":
				}
			}
		}
	}()
	return s
}

// next returns the next status event within d, skipping comments; ok is
// false if none came or the stream ended.
func (s *sseReader) next(d time.Duration) (sseEvent, bool) {
	timeout := time.After(d)
	for {
		select {
		case e, open := <-s.events:
			if !open {
				return e, false
			}
			if e.comment == "" {
				return e, true
			}
		case <-timeout:
			return sseEvent{}, false
		}
	}
}

// streamEnv is an env whose status comes from an evaluator that never
// reads a probe as slow: under the race detector on a loaded machine a
// slow probe would change the status by itself.
func streamEnv(t *testing.T, max int, heartbeat time.Duration) (*env, *StatusStreams, *health.Evaluator) {
	return streamEnvWith(t, NewStatusStreams(max, heartbeat))
}

// streamEnvWith is streamEnv serving the streams given, set up before any
// request as serve sets them up.
func streamEnvWith(t *testing.T, streams *StatusStreams) (*env, *StatusStreams, *health.Evaluator) {
	var eval *health.Evaluator
	e := newEnv(t, func(c *Config) {
		eval = health.New(c.History.(health.Store), health.Config{Region: "Test Region", SlowThreshold: time.Hour, PingTimeout: time.Minute})
		eval.Evaluate(t.Context())
		c.Status, c.Streams = eval, streams
	})
	return e, streams, eval
}

// TestStatusStream: the document at once, as GET /api/v1/status has it;
// a change pushed when the evaluator publishes it; heartbeats; Last-Event-ID resumes.
func TestStatusStream(t *testing.T) {
	e, _, eval := streamEnv(t, 10, 150*time.Millisecond)
	res, err := http.Get(e.apiURL + pathStatusStream)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.Header.Get("Content-Type") != "text/event-stream" || res.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("headers %v", res.Header)
	}

	s := openStream(t, e.apiURL, "")
	first, ok := s.next(2 * time.Second)
	if !ok || first.event != "status" || len(first.id) != 16 {
		t.Fatalf("first event %+v, %v", first, ok)
	}
	_, body := e.get(t, onAPI, "/api/v1/status")
	if first.data != strings.TrimSpace(string(body)) {
		t.Errorf("the stream's document %s, GET /api/v1/status %s", first.data, body)
	}
	// Nothing changes: a round moves updated_at only, and no event comes.
	eval.Evaluate(t.Context())
	if ev, ok := s.next(400 * time.Millisecond); ok {
		t.Errorf("an event without a change: %+v", ev)
	}
	must(t, e.store.SetComponentOverride(t.Context(), cdnapi.ComponentOverride{Name: cdnapi.ComponentUpload,
		Status: cdnapi.StatusMajorOutage, UpdatedAt: time.Now()}))
	eval.Evaluate(t.Context())
	changed := time.Now()
	second, ok := s.next(2 * time.Second)
	if !ok || second.id == first.id {
		t.Fatalf("after a change: %+v, %v", second, ok)
	}
	t.Logf("the change arrived %v after the evaluation published it", time.Since(changed).Round(time.Millisecond))
	var doc struct{ Status string }
	if json.Unmarshal([]byte(second.data), &doc) != nil || doc.Status != "major_outage" {
		t.Errorf("changed document %s", second.data)
	}
	var beats int
	for deadline := time.After(time.Second); beats < 2; {
		select {
		case ev := <-s.events:
			if ev.comment == "heartbeat" {
				beats++
			}
		case <-deadline:
			t.Fatalf("%d heartbeats in a second, want 2 at 150ms", beats)
		}
	}

	// Resume: the current ID gets nothing until the next change; an old
	// one gets the current document at once.
	current := openStream(t, e.apiURL, second.id)
	if ev, ok := current.next(400 * time.Millisecond); ok {
		t.Errorf("resumed at the current document, got %+v", ev)
	}
	stale := openStream(t, e.apiURL, first.id)
	if ev, ok := stale.next(time.Second); !ok || ev.id != second.id {
		t.Errorf("resumed at an old document, got %+v, %v; want %s", ev, ok, second.id)
	}
	must(t, e.store.ClearComponentOverride(t.Context(), cdnapi.ComponentUpload))
	eval.Evaluate(t.Context())
	if ev, ok := current.next(2 * time.Second); !ok || ev.id != first.id {
		t.Errorf("after the change back: %+v, %v; want the first document's ID %s", ev, ok, first.id)
	}
}

// TestStatusStreamBounds: past the bound a stream gets 429 with
// Retry-After; Close ends the open ones and refuses new ones.
func TestStatusStreamBounds(t *testing.T) {
	e, streams, _ := streamEnv(t, 2, time.Minute)
	a, b := openStream(t, e.apiURL, ""), openStream(t, e.apiURL, "")
	for _, s := range []*sseReader{a, b} {
		if _, ok := s.next(2 * time.Second); !ok {
			t.Fatal("no first event")
		}
	}
	res, body := e.get(t, onAPI, pathStatusStream)
	if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "" || !strings.Contains(string(body), "rate_limited") {
		t.Errorf("a third stream: %d %s", res.StatusCode, body)
	}
	streams.Close()
	for _, s := range []*sseReader{a, b} {
		if _, ok := s.next(2 * time.Second); ok {
			t.Error("an event after Close")
		}
		select {
		case _, open := <-s.events:
			if open {
				t.Error("the stream is still open after Close")
			}
		case <-time.After(time.Second):
			t.Error("the stream is still open a second after Close")
		}
	}
	if res, _ := e.get(t, onAPI, pathStatusStream); res.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a stream after Close: %d, want 429", res.StatusCode)
	}
	if res, _ := e.get(t, onAPI, pathStatusStream+"?x=1"); res.StatusCode != 400 {
		t.Errorf("with a parameter: %d, want 400", res.StatusCode)
	}
}

// TestStatusStreamOutlivesServerTimeouts: a server whose WriteTimeout and
// ReadTimeout are shorter than the stream still sends its events and
// heartbeats, since each write extends the deadline.
func TestStatusStreamOutlivesServerTimeouts(t *testing.T) {
	e, _, eval := streamEnv(t, 4, 100*time.Millisecond)
	srv := httptest.NewUnstartedServer(e.api)
	srv.Config.WriteTimeout, srv.Config.ReadTimeout = 300*time.Millisecond, 300*time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)
	s := openStream(t, srv.URL, "")
	if _, ok := s.next(time.Second); !ok {
		t.Fatal("no first event")
	}
	time.Sleep(time.Second) // three WriteTimeouts
	must(t, e.store.SetComponentOverride(t.Context(), cdnapi.ComponentOverride{Name: cdnapi.ComponentStorage,
		Status: cdnapi.StatusUnderMaintenance, UpdatedAt: time.Now()}))
	eval.Evaluate(t.Context())
	if ev, ok := s.next(2 * time.Second); !ok || !strings.Contains(ev.data, "under_maintenance") {
		t.Errorf("after the server's timeouts: %+v, %v", ev, ok)
	}
}

// TestStatusStreamMetrics: an open stream is counted open, and once it
// ends it is timed in stream_duration_seconds, not in
// request_duration_seconds, whose quantiles it would drag into +Inf; it
// is still counted among the requests answered.
func TestStatusStreamMetrics(t *testing.T) {
	e, _, _ := streamEnv(t, 10, time.Minute)
	open := e.metrics.streamsOpen.WithLabelValues("api", pathStatusStream)
	if got := testutil.ToFloat64(open); got != 0 {
		t.Fatalf("%v streams open before any, want a series at 0", got)
	}
	ctx, cancel := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.apiURL+pathStatusStream, nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if got := testutil.ToFloat64(open); got != 1 {
		t.Errorf("%v streams open while one is, want 1", got)
	}
	cancel()
	for deadline := time.Now().Add(5 * time.Second); testutil.ToFloat64(open) != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%v streams open 5s after the client went away, want 0", testutil.ToFloat64(open))
		}
	}
	families, err := e.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var streams, requests uint64
	for _, f := range families {
		for _, m := range f.GetMetric() {
			route := ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "route" {
					route = l.GetValue()
				}
			}
			if route != pathStatusStream {
				continue
			}
			switch f.GetName() {
			case "cdnapi_http_stream_duration_seconds":
				streams += m.GetHistogram().GetSampleCount()
			case "cdnapi_http_request_duration_seconds":
				requests += m.GetHistogram().GetSampleCount()
			}
		}
	}
	if streams != 1 || requests != 0 {
		t.Errorf("the stream timed %d times as a stream and %d as a request, want 1 and 0", streams, requests)
	}
	if got := testutil.ToFloat64(e.metrics.requests.WithLabelValues("api", pathStatusStream, "200")); got != 1 {
		t.Errorf("requests_total of the stream = %v, want 1", got)
	}
}

// TestStatusStreamPerClient is issue 36's: one client could hold all 500
// streams. By default an address may hold DefaultMaxStreamsPerClient (20)
// of them, and the next is 429 rate_limited in the error's JSON, with
// Retry-After, while other addresses still get theirs; a stream closed
// frees its address's slot.
func TestStatusStreamPerClient(t *testing.T) {
	t.Run("default", func(t *testing.T) {
		e, _, _ := streamEnv(t, 50, time.Minute)
		for i := range 20 {
			if s := openStream(t, e.apiURL, ""); s.res.StatusCode != 200 {
				t.Fatalf("stream %d from one address: %d, want 200", i+1, s.res.StatusCode)
			}
		}
		// Not e.get: a stream let through would never end. No proxy is
		// trusted, so the address the client writes in X-Forwarded-For
		// buys it no fresh slot.
		over := openStreamWith(t, e.apiURL, "X-Forwarded-For", "192.0.2.9")
		res := over.res
		if res.StatusCode == 200 {
			t.Fatal("the 21st stream from one address was let through: 200, want 429")
		}
		body, _ := io.ReadAll(io.LimitReader(res.Body, 4<<10))
		var doc struct {
			Error struct{ Type, Code, Message string }
		}
		if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "" ||
			json.Unmarshal(body, &doc) != nil || doc.Error.Code != "rate_limited" || !strings.Contains(doc.Error.Message, "your address") {
			t.Errorf("the 21st stream from one address: %d %s, want 429 rate_limited for the address", res.StatusCode, body)
		}
	})
	// Behind trusted proxies the forwarded address is the client, an IPv6
	// one by its /64, and a closed stream gives its slot back. Every
	// request comes from 127.0.0.1, so a cap that counted the peer would
	// refuse the second address, and one that counted whole IPv6 addresses
	// would let the third of the /64 through.
	t.Run("by forwarded address", func(t *testing.T) {
		trusted, err := ParsePrefixes("127.0.0.0/8,::1")
		must(t, err)
		e, _, _ := streamEnvWith(t, NewStatusStreams(50, time.Minute).LimitPerClient(2, NewClientResolver(trusted)))
		from := func(addr string) *sseReader { return openStreamWith(t, e.apiURL, "X-Forwarded-For", addr) }
		want := func(addr string, code int, what string) *sseReader {
			t.Helper()
			s := from(addr)
			if s.res.StatusCode != code {
				t.Errorf("%s from %s: %d, want %d", what, addr, s.res.StatusCode, code)
			}
			return s
		}
		a := want("192.0.2.1", 200, "a first stream")
		want("192.0.2.1", 200, "a second stream")
		want("192.0.2.1", http.StatusTooManyRequests, "a third stream")
		want("192.0.2.2", 200, "a stream from another forwarded address")

		want("2001:db8:1:2::1", 200, "a first stream")
		want("2001:db8:1:2:ffff::2", 200, "a second stream of the same /64")
		want("2001:db8:1:2::3", http.StatusTooManyRequests, "a third stream of the same /64")
		want("2001:db8:1:3::1", 200, "a stream from the next /64")
		if t.Failed() {
			return
		}

		// A stream closed gives its slot back once its handler sees the
		// connection gone: poll for it, as a browser's reconnect would.
		a.cancel()
		for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
			s := from("192.0.2.1")
			if s.res.StatusCode == 200 {
				break
			}
			s.cancel()
			if time.Now().After(deadline) {
				t.Fatalf("192.0.2.1 still refused (%d) 2 minutes after one of its streams closed", s.res.StatusCode)
			}
		}
		want("192.0.2.1", http.StatusTooManyRequests, "a third stream after the slot was taken again")
	})
}
