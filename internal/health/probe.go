package health

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/cdnapi/cdnapi"
)

// errTimeout is the error of a probe that did not finish within
// PingTimeout.
var errTimeout = errors.New("no answer within the ping timeout")

// maxHealthBody is how much of a health check's body is read, so that the
// connection can be reused, before the rest is dropped.
const maxHealthBody = 64 << 10

// pingStore measures storage: an error or no answer within PingTimeout is
// major_outage, an answer slower than SlowThreshold, or one that says the
// store is degraded (cdnapi.ErrDegraded), degraded_performance.
func (e *Evaluator) pingStore(ctx context.Context) measurement {
	took, err := e.within(ctx, e.store.Ping)
	return e.judge(took, err)
}

// readOverrides reads the operator overrides within PingTimeout.
func (e *Evaluator) readOverrides(ctx context.Context) ([]cdnapi.ComponentOverride, error) {
	var overrides []cdnapi.ComponentOverride
	_, err := e.within(ctx, func(ctx context.Context) error {
		var err error
		overrides, err = e.store.ComponentOverrides(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	return overrides, nil
}

// Probe measures a component: nil means it works, an error that wraps
// cdnapi.ErrDegraded that it works poorly, one that wraps ErrNotMeasured
// that no measurement is made yet, and any other error that it does not
// work. It must honour ctx, which ends after PingTimeout.
type Probe func(ctx context.Context) error

// ErrNotMeasured is what a Probe returns while its first measurement is
// still in flight (the upload canary's first round trip after a start).
// The component then reads as one not deployed (see notDeployed): no
// measurement is claimed, and none is reported as a failure.
var ErrNotMeasured = errors.New("not measured yet")

// probe runs p within PingTimeout and judges it.
func (e *Evaluator) probe(ctx context.Context, p Probe) measurement {
	took, err := e.within(ctx, p)
	if errors.Is(err, ErrNotMeasured) {
		m := notDeployed
		m.err = err
		return m
	}
	return e.judge(took, err)
}

// probeURL measures an HTTP health check (a region's edge): a 2xx answer
// within PingTimeout is operational, or degraded_performance when slower
// than SlowThreshold; anything else is major_outage.
func (e *Evaluator) probeURL(ctx context.Context, url string) measurement {
	took, err := e.within(ctx, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		req.Header.Set("User-Agent", "cdnapi-health")
		resp, err := e.cfg.HTTPClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxHealthBody))
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			return fmt.Errorf("health check answered %d", resp.StatusCode)
		}
		return nil
	})
	return e.judge(took, err)
}

// judge turns the duration and outcome of a probe into a measurement.
func (e *Evaluator) judge(took time.Duration, err error) measurement {
	switch {
	case errors.Is(err, cdnapi.ErrDegraded):
		return measurement{status: cdnapi.StatusDegradedPerformance, took: took, err: err}
	case err != nil:
		return measurement{status: cdnapi.StatusMajorOutage, took: took, err: err}
	case took > e.cfg.SlowThreshold:
		return measurement{status: cdnapi.StatusDegradedPerformance, took: took}
	default:
		return measurement{status: cdnapi.StatusOperational, took: took}
	}
}

// within runs probe with a context that ends after PingTimeout and returns
// how long it took. It returns by the timeout even if probe ignores its
// context, so one stuck probe cannot stall the round; the stuck call is
// left to finish on its own.
func (e *Evaluator) within(ctx context.Context, probe func(context.Context) error) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.PingTimeout)
	defer cancel()
	start := time.Now()
	done := make(chan error, 1) // buffered: a late probe must not block forever
	go func() { done <- probe(ctx) }()
	select {
	case err := <-done:
		if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = errTimeout
		}
		return time.Since(start), err
	case <-ctx.Done():
		return time.Since(start), errTimeout
	}
}
