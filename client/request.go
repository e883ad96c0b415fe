package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// codec turns the body of a 200 into a T, and copies a T kept in the cache
// so that callers never share one with it.
type codec[T any] struct {
	decode func(body []byte) (T, error)
	clone  func(T) T
}

// get fetches url and decodes its body with cd, retrying 429, 503 and
// network errors as the package comment says. With the cache on, it asks
// with the ETag it holds for url and returns the kept value on 304.
func get[T any](ctx context.Context, c *Client, url string, cd codec[T]) (T, error) {
	var zero T
	for attempt := 0; ; attempt++ {
		v, retryAfter, err := fetch(ctx, c, url, cd)
		if err == nil {
			return v, nil
		}
		if retryAfter < 0 || attempt >= c.maxRetries {
			return zero, err
		}
		wait := retryAfter
		if wait == 0 {
			wait = c.backoff(attempt)
		}
		// Waiting past the deadline would only end in the context's error;
		// the answer at hand says more.
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
			return zero, err
		}
		if c.onRetry != nil {
			c.onRetry(Retry{Err: err, Wait: wait, Asked: retryAfter > 0, Attempt: attempt + 1, Max: c.maxRetries})
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return zero, fmt.Errorf("client: %w while waiting to retry after: %w", ctx.Err(), err)
		}
	}
}

// backoff is the wait before retry number attempt+1 when the server did not
// say how long to wait: "full jitter", a uniform random time from zero to
// min(maxDelay, baseDelay·2^attempt), which spreads the retries of many
// clients that failed together.
func (c *Client) backoff(attempt int) time.Duration {
	ceiling := c.maxDelay
	if attempt < 32 && c.baseDelay<<attempt < ceiling && c.baseDelay<<attempt > 0 {
		ceiling = c.baseDelay << attempt
	}
	if ceiling <= 0 {
		return 0
	}
	return rand.N(ceiling + 1)
}

// fetch makes one attempt at url. On failure, retryAfter says whether the
// attempt may be repeated: negative if not, zero to back off, positive to
// wait that long as the server asked.
func fetch[T any](ctx context.Context, c *Client, url string, cd codec[T]) (v T, retryAfter time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return v, -1, fmt.Errorf("client: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	kept, cached := c.cache.get(url)
	if cached {
		req.Header.Set("If-None-Match", kept.etag)
	}

	res, err := c.http.Do(req)
	if err != nil {
		return v, transportRetry(ctx), fmt.Errorf("client: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode == http.StatusNotModified && cached {
		return cd.clone(kept.value.(T)), 0, nil
	}

	buf := getBuffer()
	defer putBuffer(buf)
	limit := int64(maxBody)
	if res.StatusCode != http.StatusOK {
		limit = maxErrorBody
	}
	if _, err := buf.ReadFrom(io.LimitReader(res.Body, limit)); err != nil {
		return v, transportRetry(ctx), fmt.Errorf("client: GET %s: reading the answer: %w", url, err)
	}
	body := buf.Bytes()
	if res.StatusCode == http.StatusOK && int64(len(body)) == limit {
		return v, -1, fmt.Errorf("client: GET %s: %w", url, errBodyTooLarge)
	}

	if res.StatusCode != http.StatusOK {
		e := newError(res, body)
		switch res.StatusCode {
		case http.StatusTooManyRequests, http.StatusServiceUnavailable:
			return v, parseRetryAfter(res.Header.Get("Retry-After"), time.Now()), e
		}
		return v, -1, e
	}
	if v, err = cd.decode(body); err != nil {
		return v, -1, fmt.Errorf("client: GET %s: %w", url, err)
	}
	if etag := res.Header.Get("ETag"); etag != "" && c.cache != nil {
		c.cache.put(url, etag, cd.clone(v))
	}
	return v, 0, nil
}

// transportRetry is the retryAfter of a transport error: back off and
// retry, unless the caller's context ended, which no retry can help.
func transportRetry(ctx context.Context) time.Duration {
	if ctx.Err() != nil {
		return -1
	}
	return 0
}

// parseRetryAfter reads a Retry-After header, either delay-seconds or an
// HTTP date. It returns zero, meaning "back off as usual", when the header
// is absent, unreadable or in the past.
func parseRetryAfter(h string, now time.Time) time.Duration {
	if h == "" {
		return 0
	}
	if s, err := strconv.ParseUint(h, 10, 32); err == nil {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// The most bytes read of an answer: a page of 100 items is about 20 KiB,
// and an error body well under 1 KiB.
const (
	maxBody      = 16 << 20
	maxErrorBody = 64 << 10
)

var errBodyTooLarge = errors.New("the answer is larger than the client accepts")

// Buffers for bodies are reused: a walk reads thousands of pages of the
// same size, and decoding copies what it keeps out of the buffer.
var buffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func getBuffer() *bytes.Buffer { return buffers.Get().(*bytes.Buffer) }

func putBuffer(b *bytes.Buffer) {
	if b.Cap() > 1<<20 {
		return // keep the pool from holding on to a rare huge answer
	}
	b.Reset()
	buffers.Put(b)
}
