package httpapi

import (
	"net/http"
	"strconv"
)

// The public routes need no key, so anyone can ask for them as often as
// they like: a crowd, or one client in a loop. Those that are rendered per
// request (the status document, its history, the status page) are served
// through a page cache of their own, so that such traffic costs one render,
// one ETag and one gzip coding per TTL and cannot starve the keyed clients
// of CPU, nor push the lists' pages out of their cache. The others (/,
// /docs, the OpenAPI document) are rendered once at start, which is as
// cheap as a cache hit. When limits are on, the guard also limits every
// public route per client address (see guard.servePublic).

// publicCacheEntries bounds the public cache: the status document and page
// are one entry each, the rest the pages of the incidents a client reads.
const publicCacheEntries = 64

// newPublicCache returns the page cache of the public routes of a listener,
// or nil when the TTL keeps nothing.
func newPublicCache(cfg Config, listener string) *pageCache {
	if cfg.PageCacheTTL <= 0 {
		return nil
	}
	return newPageCacheOf(publicCacheEntries, cfg.PageCacheTTL, cfg.Metrics.cacheCounters(listener))
}

// cachedRender serves render's answers through cache, keyed by name and,
// when byQuery, the request's query as the client spelled it: these routes
// take no parameters, and a spelling that is not canonical ("?&") costs a
// render, no more. (The incidents list, which takes limit and cursor, is
// keyed by its parsed query, as the other lists are.) A page that ignores its query (the
// status page: people's links carry all sorts) is one entry whatever the
// query. live, when set, is part of the key: what the answer shows from
// memory, which must show at once when it changes, not a TTL later.
func cachedRender(cache *pageCache, name string, byQuery bool, live func() string, render render) http.Handler {
	return cache.handler(func(r *http.Request) (listRequest, error) {
		key := name
		if byQuery {
			key += "?" + r.URL.RawQuery
		}
		if live != nil {
			key += "#" + live()
		}
		return listRequest{key: key, render: render}, nil
	})
}

// statusPageLive is what the status page shows from memory: the status
// document and the version of the probed regions.
func statusPageLive(cfg Config) func() string {
	return func() string {
		b := make([]byte, 0, 1024)
		if cfg.RegionsVersion != nil {
			b = strconv.AppendUint(b, cfg.RegionsVersion(), 10)
		}
		return string(appendStatusDocument(b, cfg.Status.Document()))
	}
}
