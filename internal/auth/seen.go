package auth

import (
	"hash/maphash"
	"maps"
	"sync"
	"sync/atomic"
)

// maxSeen bounds the keys a snapshot remembers. Past it, further keys are
// verified by their SHA-256 hash on every request, as before they were seen.
const maxSeen = 4096

// seed keys the map of seen keys; it is random per process.
var seed = maphash.MakeSeed()

// seenKeys remembers the keys a snapshot has verified, so that a key in use
// costs a fast keyed hash per request rather than a SHA-256 (which is about
// a fifth of a cached page's processor time). Only a key that verified is
// added, so a client guessing keys adds nothing; the keys live in this
// process's memory only, and only until the next refresh replaces the
// snapshot.
//
// Reads take no lock: the map is replaced, never changed, when a key is
// added, which happens once per key and snapshot.
type seenKeys struct {
	m  atomic.Pointer[map[uint64]seenKey]
	mu sync.Mutex // serialises add
}

type seenKey struct {
	key string
	e   *entry
}

// lookup returns the entry of key when it was seen, else nil. The key is
// compared in constant time.
func (s *seenKeys) lookup(key string) *entry {
	m := s.m.Load()
	if m == nil {
		return nil
	}
	sk, ok := (*m)[maphash.String(seed, key)]
	if !ok || !equalConstantTime(sk.key, key) {
		return nil
	}
	return sk.e
}

// add remembers that key verified as e.
func (s *seenKeys) add(key string, e *entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var m map[uint64]seenKey
	if old := s.m.Load(); old != nil {
		if len(*old) >= maxSeen {
			return
		}
		m = maps.Clone(*old)
	} else {
		m = map[uint64]seenKey{}
	}
	// A 64-bit collision between two keys only costs the second one its
	// place here: it is still verified by its hash.
	h := maphash.String(seed, key)
	if _, taken := m[h]; taken {
		return
	}
	m[h] = seenKey{key: key, e: e}
	s.m.Store(&m)
}

// equalConstantTime reports whether a == b, in a time that depends on
// their length only (crypto/subtle's takes byte slices, and converting a
// key to one would allocate on every request).
func equalConstantTime(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	var diff byte
	for i := range len(a) {
		diff |= a[i] ^ b[i]
	}
	return diff == 0
}
