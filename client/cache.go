package client

import (
	lru "github.com/hashicorp/golang-lru/v2"
)

// pageCache keeps the last decoded answer and ETag of recently fetched URLs,
// for conditional requests. A nil *pageCache keeps nothing.
type pageCache struct {
	lru *lru.Cache[string, cachedPage]
}

type cachedPage struct {
	etag  string
	value any // the decoded answer, of the type the URL decodes into
}

func newPageCache(entries int) *pageCache {
	l, err := lru.New[string, cachedPage](max(entries, 1))
	if err != nil {
		panic(err) // only for a size below 1, which max rules out
	}
	return &pageCache{lru: l}
}

func (pc *pageCache) get(url string) (cachedPage, bool) {
	if pc == nil {
		return cachedPage{}, false
	}
	return pc.lru.Get(url)
}

func (pc *pageCache) put(url, etag string, value any) {
	if pc != nil {
		pc.lru.Add(url, cachedPage{etag: etag, value: value})
	}
}
