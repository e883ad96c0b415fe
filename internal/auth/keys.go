// Package auth issues and verifies the API keys of cdnapi.
//
// A key is "cdk_" and 32 random base62 characters (190 bits). The store
// keeps only its SHA-256 hash: keys are random, not passwords, so a fast
// hash is enough, and a stolen database yields no usable key.
//
// A Verifier answers every request from memory: it holds a snapshot of all
// keys, refreshed from the store every RefreshInterval, so a request never
// costs a database round trip and an unknown key never reaches the
// database. A key created, revoked or expired takes effect on every process
// within one RefreshInterval (expiry at once: it is checked against the
// clock on each request). A key that verified is remembered until the next
// refresh, so that a key in use is not hashed on every request. When it was last used is recorded coarsely, per
// minute, and written in batches in the background.
package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"time"

	"github.com/cdnapi/cdnapi"
)

// KeyPrefix starts every API key.
const KeyPrefix = "cdk_"

// IDPrefix starts every key ID.
const IDPrefix = "key_"

// keyChars is the number of random characters of a key: 32 base62
// characters carry 190 bits, well over the 128 the contract asks for.
const keyChars = 32

// ShownChars is how many of a key's random characters its record keeps
// and keys list shows, after KeyPrefix: 4 base62 characters give away 24 of
// its 190 bits, and tell the keys of one deployment apart at a glance.
const ShownChars = 4

// idChars is the number of random characters of a key ID: 16 base62
// characters make collisions negligible; IDs are not secret.
const idChars = 16

// NewKey returns a new key for project, of scope, and its record for the
// store. The key is shown once and never stored. An empty scope is
// cdnapi.ScopeRead; a zero expires means the key never expires. The
// caller checks that scope is valid and project not reserved.
func NewKey(project string, scope cdnapi.KeyScope, label string, now, expires time.Time) (key string, rec cdnapi.APIKey) {
	key = KeyPrefix + randomBase62(keyChars)
	rec = cdnapi.APIKey{
		ID:        IDPrefix + randomBase62(idChars),
		Hash:      Hash(key),
		Prefix:    key[:len(KeyPrefix)+ShownChars],
		Project:   project,
		Scope:     scope.OrRead(),
		Label:     label,
		CreatedAt: now.UTC().Truncate(time.Second),
	}
	if !expires.IsZero() {
		rec.ExpiresAt = expires.UTC().Truncate(time.Second)
	}
	return key, rec
}

// Hash returns the SHA-256 hash of key, as stored.
func Hash(key string) [32]byte { return sha256.Sum256([]byte(key)) }

// WellFormed reports whether key has the shape of an API key, so that
// anything else is refused without hashing.
func WellFormed(key string) bool {
	if len(key) != len(KeyPrefix)+keyChars || key[:len(KeyPrefix)] != KeyPrefix {
		return false
	}
	for i := len(KeyPrefix); i < len(key); i++ {
		c := key[i]
		if !('0' <= c && c <= '9' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z') {
			return false
		}
	}
	return true
}

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// randomBase62 returns n characters drawn uniformly from base62 by
// crypto/rand.
func randomBase62(n int) string {
	out := make([]byte, 0, n)
	var buf [64]byte
	for len(out) < n {
		rand.Read(buf[:]) // never fails, per its documentation
		for _, c := range buf {
			// 248 is the largest multiple of 62 below 256: dropping larger
			// bytes keeps every character equally likely.
			if c < 248 && len(out) < n {
				out = append(out, base62[c%62])
			}
		}
	}
	return string(out)
}
