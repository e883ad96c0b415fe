// Package client is a Go client of the cdnapi read API. It pages for you,
// retries what is safe to retry, and turns error answers into *Error.
//
// A Client talks to the two public addresses of a deployment: the API
// address, which serves files and the status, and the edge address, which
// serves regions and assets. ListFiles, ListAssets, ListRegions and Status
// each fetch one page or document; Files and Assets walk every page of a
// list, following next_cursor, as Go iterators.
//
// Every call is a GET, so every call may be retried: on 429, on 503 and on
// network errors, with exponential backoff and full jitter, or after the
// server's Retry-After when it gives one. A wait that would end after the
// context's deadline is not begun: the call returns the answer it has. Other
// answers are never retried.
// Because the lists page by keyset (a cursor holds the position of the last
// item shown), a retried page is the same page: a walk neither repeats nor
// skips an item, whatever was retried and whatever was inserted meanwhile.
package client

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Client is a client of one cdnapi deployment. It is safe for concurrent
// use by several goroutines.
type Client struct {
	api, edge  string // base URLs without a trailing slash; "" if not given
	http       *http.Client
	key        string
	userAgent  string
	maxRetries int
	baseDelay  time.Duration
	maxDelay   time.Duration
	cache      *pageCache  // nil unless WithCache
	onRetry    func(Retry) // nil unless WithRetryNotice
}

// The defaults of the options.
const (
	DefaultMaxRetries = 4
	DefaultBaseDelay  = 200 * time.Millisecond
	DefaultMaxDelay   = 10 * time.Second
	DefaultUserAgent  = "cdnapi-go/1"
)

// An Option configures a Client in New.
type Option func(*Client)

// WithAPIKey sends key as "Authorization: Bearer key" on every request, for
// deployments that run with authentication on. The key also chooses whose
// files are listed.
func WithAPIKey(key string) Option { return func(c *Client) { c.key = key } }

// WithHTTPClient makes the Client send its requests through hc instead of
// http.DefaultClient, for example to set timeouts, a proxy or TLS settings.
// The Client retries by itself, so hc should not.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.http = hc } }

// WithUserAgent sets the User-Agent of every request. Default
// DefaultUserAgent.
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// WithRetries sets how often a request is retried after a 429, a 503 or a
// network error (max; 0 never retries), and the backoff between attempts:
// attempt n waits a random time from zero to min(maxDelay, base·2ⁿ) ("full
// jitter"), unless the answer carried a Retry-After, which is honoured
// instead. Defaults DefaultMaxRetries, DefaultBaseDelay and DefaultMaxDelay.
func WithRetries(max int, base, maxDelay time.Duration) Option {
	return func(c *Client) { c.maxRetries, c.baseDelay, c.maxDelay = max, base, maxDelay }
}

// Retry is a retry about to be waited for: what the failed attempt
// answered, how long the Client waits, and which retry follows.
type Retry struct {
	Err     error         // an *Error (429, 503) or a transport error
	Wait    time.Duration // how long until the retry
	Asked   bool          // the server asked for Wait with Retry-After
	Attempt int           // the retry that follows: 1 for the first
	Max     int           // the most retries (WithRetries)
}

// WithRetryNotice calls notice before each wait to retry, so that a program
// can say why it is waiting: a Retry-After of a 429 may be many seconds.
// notice must return quickly; it may be called by several goroutines.
func WithRetryNotice(notice func(Retry)) Option {
	return func(c *Client) { c.onRetry = notice }
}

// WithCache turns on conditional requests: the Client keeps the last page
// and ETag of up to entries URLs, sends If-None-Match when it asks for one
// of them again, and on 304 Not Modified returns the kept page without
// reading or decoding a body. Pages of files are kept per Client, hence per
// API key.
func WithCache(entries int) Option {
	return func(c *Client) { c.cache = newPageCache(entries) }
}

// New returns a Client of the deployment whose API address is apiURL (files,
// status) and whose edge address is edgeURL (regions, assets), such as
// "http://127.0.0.1:8080" and "http://127.0.0.1:8081". Either may be empty
// if its endpoints are not used; calling one of them then fails.
func New(apiURL, edgeURL string, opts ...Option) (*Client, error) {
	c := &Client{
		http:       http.DefaultClient,
		userAgent:  DefaultUserAgent,
		maxRetries: DefaultMaxRetries,
		baseDelay:  DefaultBaseDelay,
		maxDelay:   DefaultMaxDelay,
	}
	var err error
	if c.api, err = baseURL("API", apiURL); err != nil {
		return nil, err
	}
	if c.edge, err = baseURL("edge", edgeURL); err != nil {
		return nil, err
	}
	for _, opt := range opts {
		opt(c)
	}
	switch {
	case c.http == nil:
		return nil, errors.New("client: WithHTTPClient(nil)")
	case c.maxRetries < 0 || c.baseDelay < 0 || c.maxDelay < c.baseDelay:
		return nil, errors.New("client: WithRetries wants max >= 0 and 0 <= base <= maxDelay")
	}
	return c, nil
}

// baseURL checks that s is an absolute http or https URL with no query, and
// returns it without a trailing slash.
func baseURL(which, s string) (string, error) {
	if s == "" {
		return "", nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("client: %s URL %q: want http:// or https://, a host, and no query", which, s)
	}
	return strings.TrimRight(s, "/"), nil
}
