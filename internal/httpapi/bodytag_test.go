package httpapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"testing"
)

// TestBodyTag checks that the ETag's opaque part is a function of the body's
// bytes alone, fixed across processes (replicas must agree), and tells
// bodies that differ in one byte apart.
func TestBodyTag(t *testing.T) {
	// XXH64 of "" with seed 0 is ef46db3751d8e999: pinned, so that a change
	// of the hash, which would change every tag, is a decision.
	if got, want := bodyTag(nil), "70bbN1HY6Zk"; got != want {
		t.Errorf("bodyTag(empty) = %q, want %q", got, want)
	}
	a := bytes.Repeat([]byte(`{"id":"fil_x"}`), 300)
	b := bytes.Clone(a)
	b[len(b)/2] ^= 1
	if bodyTag(a) != bodyTag(bytes.Clone(a)) {
		t.Error("equal bodies have different tags")
	}
	if bodyTag(a) == bodyTag(b) {
		t.Error("bodies one bit apart share a tag")
	}
	if tag := bodyTag(a); len(tag) != 11 {
		t.Errorf("tag %q: %d characters, want 11 (64 bits in base64url)", tag, len(tag))
	}
}

// BenchmarkBodyTag compares the ETag of a page of 20 files (about 4 KiB) by
// xxHash, which bodyTag uses, with the 128 bits of SHA-256 it replaced.
func BenchmarkBodyTag(b *testing.B) {
	body := bytes.Repeat([]byte(`{"id":"fil_0123456789","created_at":"2026-11-20T12:00:00Z","filename":"a/b/c.txt","bytes":1234,"checksum":"sha256:0123"},`), 4272/120)
	b.Run("xxhash", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			bodyTag(body)
		}
	})
	b.Run("sha256", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			sum := sha256.Sum256(body)
			base64.RawURLEncoding.EncodeToString(sum[:16])
		}
	})
}
