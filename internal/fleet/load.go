package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// kind is what a request of the drill's load is for.
type kind int

const (
	kindList   kind = iota // a first page, from a client under its limit
	kindWalk               // the next page of a cursor walk
	kindHot                // a client over its rate limit
	kindStatus             // the status document, polled on the side
)

// sample is one answered (or failed) request.
type sample struct {
	step       int // the step in progress when it was sent
	endStep    int // the step in progress when it was answered (or failed)
	kind       kind
	client     string    // the client it was sent as (X-Forwarded-For)
	at         time.Time // when it was sent
	latency    time.Duration
	status     int    // 0: no answer (connection failed, timeout)
	code       string // the error code of an error body
	retryAfter bool
	// decided: the answer carries RateLimit, so the limiter took a token
	// (or refused one); a 200 without it was served with the limit off.
	decided   bool
	remaining int    // RateLimit's r=: the tokens left in the client's bucket
	servedBy  string // haproxy's X-Served-By
	storage   string // kindStatus: the status of the Storage component
	apiStatus string // kindStatus: the status of the API component
	crossed   bool   // kindWalk: its cursor came from another process
	mintedBy  string
}

// load sends requests through haproxy at a fixed rate, whatever the
// answers take (an open loop, so that a slow fleet cannot slow the load
// down and hide its own latency), and records every answer.
type load struct {
	f        *Fleet
	client   *http.Client
	rate     int
	step     atomic.Int32 // the drill step that new requests count towards
	inflight atomic.Int64
	dropped  atomic.Int64 // not sent: too many requests in flight
	check    func(*http.Request, *http.Response, []byte)

	mu      sync.Mutex
	samples []sample
	walkers chan *walker
	walks   []walkResult
}

// walker pages through every file with a cursor, one page per turn.
type walker struct {
	id       int
	cursor   string
	mintedBy string // the process that made cursor
	seen     map[string]bool
	pages    int
	repeats  int // files seen twice in this walk
}

// walkResult is a finished walk.
type walkResult struct {
	files, pages int
	repeated     int // files seen twice in one walk
}

const (
	walkers      = 20
	walkPageSize = 50
	maxInflight  = 512
	hotClients   = 2
)

func newLoad(f *Fleet, rate int, check func(*http.Request, *http.Response, []byte)) *load {
	l := &load{f: f, rate: rate, check: check, walkers: make(chan *walker, walkers),
		client: &http.Client{
			Timeout:   15 * time.Second,
			Transport: &http.Transport{MaxIdleConnsPerHost: maxInflight, IdleConnTimeout: 30 * time.Second},
		}}
	for i := range walkers {
		l.walkers <- &walker{id: i, seen: map[string]bool{}}
	}
	return l
}

// run sends the load until ctx ends, then waits for the answers.
func (l *load) run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { l.pollStatus(ctx) })
	interval := time.Second / time.Duration(l.rate)
	start := time.Now()
	for i := 0; ; i++ {
		next := start.Add(time.Duration(i) * interval)
		select {
		case <-ctx.Done():
			wg.Wait()
			return
		case <-time.After(time.Until(next)):
		}
		if l.inflight.Load() >= maxInflight {
			l.dropped.Add(1)
			continue
		}
		l.inflight.Add(1)
		wg.Go(func() {
			defer l.inflight.Add(-1)
			l.send(i)
		})
	}
}

// send sends request number i of the mix: 3 in 10 from the clients over
// their limit, 3 first pages of lists, 2 hot first pages of files, 2 steps
// of cursor walks.
func (l *load) send(i int) {
	ident := fmt.Sprintf("10.0.0.%d", i%50) // under the limit: ~rate/50 per second each
	switch i % 10 {
	case 0, 1, 2:
		l.get(kindHot, "http://"+l.f.API+"/api/v1/files?limit=20", fmt.Sprintf("10.9.9.%d", i%hotClients+1), nil)
	case 3:
		l.get(kindList, "http://"+l.f.Edge+"/api/v1/assets?limit=20", ident, nil)
	case 4:
		l.get(kindList, "http://"+l.f.Edge+"/api/v1/regions", ident, nil)
	case 5:
		l.get(kindList, "http://"+l.f.API+"/api/v1/files?limit=100", ident, nil)
	case 6, 7:
		l.get(kindList, "http://"+l.f.API+"/api/v1/files?limit=20", ident, nil)
	default:
		select {
		case w := <-l.walkers:
			l.walk(w)
			l.walkers <- w
		default: // every walker is waiting for a page: a list instead
			l.get(kindList, "http://"+l.f.API+"/api/v1/files?limit=20", ident, nil)
		}
	}
}

// walk fetches the walker's next page.
func (l *load) walk(w *walker) {
	q := url.Values{"limit": {fmt.Sprint(walkPageSize)}}
	if w.cursor != "" {
		q.Set("cursor", w.cursor)
	}
	var page struct {
		Data       []struct{ ID string }
		NextCursor *string `json:"next_cursor"`
	}
	s := l.get(kindWalk, "http://"+l.f.API+"/api/v1/files?"+q.Encode(), fmt.Sprintf("10.0.1.%d", w.id), func(s *sample, body []byte) {
		s.mintedBy = w.mintedBy
		s.crossed = w.cursor != "" && s.servedBy != w.mintedBy
		if s.status == http.StatusOK {
			json.Unmarshal(body, &page)
		}
	})
	if s.status != http.StatusOK {
		return // 429, 503, a failure: the same cursor next turn
	}
	for _, f := range page.Data {
		if w.seen[f.ID] {
			w.repeats++
		}
		w.seen[f.ID] = true
	}
	w.pages++
	if page.NextCursor != nil {
		w.cursor, w.mintedBy = *page.NextCursor, s.servedBy
		return
	}
	r := walkResult{files: len(w.seen), pages: w.pages, repeated: w.repeats}
	l.mu.Lock()
	l.walks = append(l.walks, r)
	l.mu.Unlock()
	w.cursor, w.mintedBy, w.pages, w.repeats, w.seen = "", "", 0, 0, map[string]bool{}
}

// get sends one GET as client ident (X-Forwarded-For, which haproxy
// extends and cdnapi believes from haproxy) and records the answer; inspect
// sees the sample and body before the sample is stored.
func (l *load) get(k kind, u, ident string, inspect func(*sample, []byte)) sample {
	s := sample{step: int(l.step.Load()), kind: k, client: ident, at: time.Now()}
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		panic(err) // the URLs are ours
	}
	if ident != "" {
		req.Header.Set("X-Forwarded-For", ident)
	}
	res, err := l.client.Do(req)
	var body []byte
	if err == nil {
		body, err = io.ReadAll(res.Body)
		res.Body.Close()
	}
	s.latency = time.Since(s.at)
	s.endStep = int(l.step.Load())
	if err == nil {
		s.status = res.StatusCode
		s.servedBy = res.Header.Get("X-Served-By")
		s.retryAfter = res.Header.Get("Retry-After") != ""
		s.remaining, s.decided = rateRemaining(res.Header.Get("RateLimit"))
		if res.StatusCode >= 400 {
			var e struct{ Error struct{ Code string } }
			json.Unmarshal(body, &e)
			s.code = e.Error.Code
		}
		if l.check != nil {
			l.check(req, res, body)
		}
	}
	if inspect != nil {
		inspect(&s, body)
	}
	l.mu.Lock()
	l.samples = append(l.samples, s)
	l.mu.Unlock()
	return s
}

// pollStatus reads the status document four times a second until ctx ends.
func (l *load) pollStatus(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(250 * time.Millisecond):
		}
		l.get(kindStatus, "http://"+l.f.API+"/api/v1/status", "", func(s *sample, body []byte) {
			var doc struct {
				Components []struct{ Name, Status string }
			}
			json.Unmarshal(body, &doc)
			for _, c := range doc.Components {
				switch c.Name {
				case "Storage":
					s.storage = c.Status
				case "API":
					s.apiStatus = c.Status
				}
			}
			if s.status == http.StatusOK && s.storage == "" {
				s.storage = "missing"
			}
		})
	}
}
