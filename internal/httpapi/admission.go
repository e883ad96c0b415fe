package httpapi

import (
	"sync/atomic"

	"github.com/cespare/xxhash/v2"
)

// doorkeeper is the page cache's admission rule: a page goes in on its
// second miss, not its first. A walk over a list, or deep pages at random
// cursors, asks for each page once; putting every one of them in would copy
// its body and tag into the cache, push out pages that are asked for again,
// and leave the collector entries to free, for no hit. A page that is asked
// for twice while the doorkeeper remembers it (the first page of a list, a
// page that a crowd reads) goes in on the second request, and again on the
// first miss after it expires, since it is still remembered.
//
// The memory is a table of doorkeeperSlots hashes of keys, one per slot,
// without locks: a key overwrites whatever its slot held, so the doorkeeper
// remembers about the last doorkeeperSlots distinct misses. Two keys that
// share a slot and hash only cost an admission too early or too late.
type doorkeeper struct {
	seen [doorkeeperSlots]atomic.Uint64
}

// doorkeeperSlots is a power of two: 4,096 slots, 32 KiB.
const doorkeeperSlots = 1 << 12

// admit reports whether key was seen before, and remembers it.
func (d *doorkeeper) admit(key string) bool {
	h := xxhash.Sum64String(key) | 1 // 0 is an empty slot
	slot := &d.seen[h&(doorkeeperSlots-1)]
	if slot.Load() == h {
		return true
	}
	slot.Store(h)
	return false
}
