package httpapi

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/singleflight"
)

// pageCache keeps the rendered answers of the lists for a short time, so
// that a page that many clients ask for at once (the first page above all)
// costs one store query and one encoding per TTL, and is otherwise served
// like a static file: a map lookup and a write of prepared bytes, with its
// ETag and each content coding (gzip, zstd) computed once.
//
// The lists already tell clients and shared caches to keep them for 60
// seconds or more (Cache-Control), so holding them here for a second or two
// adds no staleness a client could not see anyway. Errors are never kept.
// Concurrent misses on one URL render it once (singleflight), so a burst on a
// cold page does not become a burst on the store.
//
// The lists' caches admit a page on its second miss, not its first (see
// doorkeeper), so a stream of pages read once (a crawler's walk, deep
// cursors) is served without being copied into the cache at all; in
// scripts/bench-http on PostgreSQL that took serve's peak RSS from 50 to 35
// MiB. Among the pages that are in, the least recently used makes room for
// a new one, so the page everyone reads stays. An entry past its time is skipped on
// read and replaced. A sweep drops such entries a TTL after a page was put in,
// and again while any are left, so that a cache no one reads lets its memory
// go, and an idle server does no work for it (a sweeper on a fixed tick, as
// expirable.LRU has, woke every 10 ms per listener).
type pageCache struct {
	entries  *lru.Cache[string, cachedPage]
	ttl      time.Duration
	renders  singleflight.Group
	counts   cacheCounters
	sweeping atomic.Bool // a sweep is scheduled
	// door, when set, admits a page on its second miss (see doorkeeper);
	// without it every page rendered goes in.
	door *doorkeeper
}

// cachedPage is an answer of the page cache and when its time is up.
type cachedPage struct {
	rep     *representation
	expires time.Time
}

// pageCacheEntries bounds the memory of the cache: a page of 100 files is
// about 20 KiB, and 7 KiB more for each of its gzip and zstd codings once a
// client asked for it, so the bound is about 9 MiB.
const pageCacheEntries = 256

// newPageCache returns a cache of the lists' pages that keeps answers for
// ttl and admits a page on its second miss, or nil, which caches nothing,
// when ttl is not positive.
func newPageCache(ttl time.Duration, counts cacheCounters) *pageCache {
	if ttl <= 0 {
		return nil
	}
	c := newPageCacheOf(pageCacheEntries, ttl, counts)
	c.door = new(doorkeeper)
	return c
}

// newPageCacheOf returns a cache of at most size pages that admits every
// page it renders.
func newPageCacheOf(size int, ttl time.Duration, counts cacheCounters) *pageCache {
	c := &pageCache{ttl: ttl, counts: counts}
	// An entry dropped for room while still fresh is an eviction; one
	// past its time that makes room was due to go anyway.
	entries, err := lru.NewWithEvict(size, func(_ string, p cachedPage) {
		if time.Now().Before(p.expires) {
			counts.evictions.Inc()
		}
	})
	if err != nil {
		panic(err) // size is not positive: a programming error
	}
	c.entries = entries
	return c
}

// handler serves the pages that parse asks for, through the cache when there
// is one. The cache key is the parsed request's canonical key (see
// listRequest), which holds everything an answer depends on; the content
// coding and If-None-Match are applied per request when serving.
func (c *pageCache) handler(parse parseList) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, err := parse(r)
		if err != nil {
			writeError(w, r, err)
			return
		}
		if c == nil {
			rep, err := req.render(r)
			if err != nil {
				writeError(w, r, err)
				return
			}
			rep.serve(w, r)
			return
		}
		key := req.key
		page, ok := c.entries.Get(key)
		rep := page.rep
		if ok && requestTime(r.Context()).Before(page.expires) {
			c.counts.hits.Inc()
		} else {
			c.counts.misses.Inc()
			v, err, _ := c.renders.Do(key, func() (any, error) {
				// The render is shared by every request waiting on this
				// key, so the first one hanging up must not cancel it; the
				// store timeout still bounds it.
				rep, err := req.render(r.WithContext(context.WithoutCancel(r.Context())))
				if err != nil {
					return nil, err
				}
				if c.door != nil && !c.door.admit(key) {
					return rep, nil // served to the requests waiting on it, then garbage
				}
				rep.precompute()
				c.add(key, rep)
				return rep, nil
			})
			if err != nil {
				writeError(w, r, err)
				return
			}
			rep = v.(*representation)
		}
		rep.serve(w, r)
	})
}

// add keeps rep under key for the TTL and makes sure a sweep is scheduled.
func (c *pageCache) add(key string, rep *representation) {
	c.entries.Add(key, cachedPage{rep: rep, expires: time.Now().Add(c.ttl)})
	c.scheduleSweep()
}

func (c *pageCache) scheduleSweep() {
	if c.sweeping.CompareAndSwap(false, true) {
		time.AfterFunc(c.ttl, c.sweep)
	}
}

// sweep drops the entries past their time. While entries are left it runs
// again a TTL later; when none are, it stops until the next add.
func (c *pageCache) sweep() {
	now := time.Now()
	for _, key := range c.entries.Keys() {
		// An entry put in again between the two calls is dropped with the
		// old one: it is rendered again on its next read, no more.
		if p, ok := c.entries.Peek(key); ok && !now.Before(p.expires) {
			c.entries.Remove(key)
		}
	}
	if c.entries.Len() > 0 {
		time.AfterFunc(c.ttl, c.sweep)
		return
	}
	c.sweeping.Store(false)
	if c.entries.Len() > 0 { // an add came between Len and Store, and saw a sweep scheduled
		c.scheduleSweep()
	}
}
