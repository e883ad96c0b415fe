package health

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/cdnapi/cdnapi"
)

// The defaults of CanaryConfig.
const (
	DefaultCanaryInterval = 30 * time.Second
	DefaultCanaryTimeout  = 30 * time.Second
	DefaultCanarySlow     = 5 * time.Second
)

// canaryPoll is how often the canary looks for its file in the list.
const canaryPoll = 50 * time.Millisecond

// CanaryConfig configures a Canary. Zero fields take their defaults.
type CanaryConfig struct {
	UploadURL string // the upload server's base URL, such as http://127.0.0.1:8082
	// Key is an API key of the upload scope for cdnapi.CanaryProject:
	// the canary's own, so that what it uploads is never a user's.
	Key   string
	Files cdnapi.FileReader // where the canary looks for its file, listed
	// Interval is the time between the starts of two round trips.
	// DefaultCanaryInterval.
	Interval time.Duration
	// Timeout bounds a round trip: not listed by then is an outage.
	// DefaultCanaryTimeout.
	Timeout time.Duration
	// Slow is the round trip past which the upload service is
	// degraded_performance. DefaultCanarySlow.
	Slow   time.Duration
	Client *http.Client // a plain one if nil
	Logger *slog.Logger // each failed round trip, with why; discarded if nil
}

// Canary measures the upload service end to end, as a user meets it: it
// uploads a small file of its own through the upload server, waits until
// the file is scanned, promoted and listed with its checksum, then deletes
// it. A round trip takes over a second (the origin's settle time), longer
// than a status round may wait, so the canary runs on its own (Run) and the
// status reads its last result (Probe).
type Canary struct {
	cfg  CanaryConfig
	name string // this canary's name prefix, unique to the process

	mu       sync.Mutex
	measured bool  // a round trip has finished
	last     error // of the last round trip
}

// errFirstInFlight is why the upload service is not measured yet: serve
// starts the canary with its status, and the first round trip takes over
// a second, through listeners that serve only once the first status is
// made. An upload still in flight is no failure.
var errFirstInFlight = fmt.Errorf("%w: the upload canary's first round trip has not finished", ErrNotMeasured)

// NewCanary returns a Canary. It starts nothing.
func NewCanary(cfg CanaryConfig) *Canary {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultCanaryInterval
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultCanaryTimeout
	}
	if cfg.Slow <= 0 {
		cfg.Slow = DefaultCanarySlow
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.UploadURL = strings.TrimSuffix(cfg.UploadURL, "/")
	return &Canary{cfg: cfg, name: "canary-" + randomHex(6)}
}

// Run makes a round trip every Interval until ctx ends.
func (c *Canary) Run(ctx context.Context) {
	t := time.NewTicker(c.cfg.Interval)
	defer t.Stop()
	for {
		took, err := c.RoundTrip(ctx)
		if ctx.Err() != nil {
			return
		}
		if err == nil && took > c.cfg.Slow {
			err = fmt.Errorf("%w: the canary's round trip took %s, over %s", cdnapi.ErrDegraded, took.Round(time.Millisecond), c.cfg.Slow)
		}
		if err != nil {
			c.cfg.Logger.Warn("health: upload canary", "error", err, "took", took.Round(time.Millisecond))
		}
		c.mu.Lock()
		c.measured, c.last = true, err
		c.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Probe returns the status's probe of the upload service: the result of
// the last round trip, from memory. Before the first has finished it
// returns ErrNotMeasured: waiting for it would outlast a status round, and
// reading the wait as a failure would report an outage at every start.
func (c *Canary) Probe() Probe {
	return func(context.Context) error {
		c.mu.Lock()
		defer c.mu.Unlock()
		if !c.measured {
			return errFirstInFlight
		}
		return c.last
	}
}

// RoundTrip uploads a file, waits until it is listed with its checksum,
// deletes it, and returns how long the upload took to be listed.
func (c *Canary) RoundTrip(ctx context.Context) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	name := fmt.Sprintf("%s-%d.txt", c.name, time.Now().UnixNano())
	body := []byte("cdnapi upload canary " + randomHex(16) + "\n")
	sum := sha256.Sum256(body)
	checksum := "sha256:" + hex.EncodeToString(sum[:])

	start := time.Now()
	if err := c.send(ctx, http.MethodPut, name, body); err != nil {
		return time.Since(start), fmt.Errorf("upload: %w", err)
	}
	for {
		files, err := c.cfg.Files.ListFiles(ctx, cdnapi.FileQuery{Project: cdnapi.CanaryProject, Limit: 100})
		if err != nil && ctx.Err() == nil {
			return time.Since(start), fmt.Errorf("list the canary's files: %w", err)
		}
		if listed(files, name, checksum) {
			break
		}
		select {
		case <-ctx.Done():
			return time.Since(start), fmt.Errorf("uploaded, but not listed within %s (scanned? promoted?)", c.cfg.Timeout)
		case <-time.After(canaryPoll):
		}
	}
	took := time.Since(start)
	if err := c.send(ctx, http.MethodDelete, name, nil); err != nil {
		return took, fmt.Errorf("delete: %w", err)
	}
	return took, nil
}

// listed reports whether files hold name with checksum.
func listed(files []cdnapi.File, name, checksum string) bool {
	for _, f := range files {
		if f.Filename == name && f.Checksum == checksum {
			return true
		}
	}
	return false
}

// send makes one request of the upload server and wants a 2xx answer.
func (c *Canary) send(ctx context.Context, method, name string, body []byte) error {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.cfg.UploadURL+"/"+name, r)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.cfg.Key)
	req.Header.Set("User-Agent", "cdnapi-canary")
	resp, err := c.cfg.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("the upload server answered %d: %s", resp.StatusCode, bytes.TrimSpace(msg))
	}
	return nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
