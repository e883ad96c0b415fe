package httpapi

import (
	"bytes"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
)

// TestDoorkeeper checks the admission rule: a key goes in on its second
// miss, and stays admitted until another key takes its slot.
func TestDoorkeeper(t *testing.T) {
	var d doorkeeper
	for i, step := range []struct {
		key  string
		want bool
	}{
		{"a", false}, // first miss: remembered, not admitted
		{"a", true},  // second: admitted
		{"a", true},  // and again, after its entry expired
		{"b", false},
		{"b", true},
		{"a", true}, // b did not take a's slot
	} {
		if got := d.admit(step.key); got != step.want {
			t.Errorf("step %d: admit(%q) = %v, want %v", i, step.key, got, step.want)
		}
	}
	// A key whose slot another key took since is a first miss again.
	a := "a"
	slot := (xxhash.Sum64String(a) | 1) & (doorkeeperSlots - 1)
	for i := 0; ; i++ {
		k := "k" + strconv.Itoa(i)
		if (xxhash.Sum64String(k)|1)&(doorkeeperSlots-1) == slot {
			d.admit(k)
			break
		}
	}
	if d.admit(a) {
		t.Error("a key whose slot was taken was admitted on its next miss")
	}
}

// BenchmarkAdmission measures what the page cache itself costs on a load of
// deep pages: requests for 10,000 pages at random, each rendered as a body
// of 4 KiB without a store, through a cache that admits every page and
// through one with a doorkeeper. The render is the same in both, so the
// difference is the cache's: copying into it, evictions, sweeps and the
// garbage they leave.
func BenchmarkAdmission(b *testing.B) {
	body := bytes.Repeat([]byte("x"), 4272)
	render := func(*http.Request) (*representation, error) {
		return &representation{contentType: "application/json", cacheControl: cacheFiles, body: bytes.Clone(body)}, nil
	}
	keys := make([]string, 10000)
	for i := range keys {
		keys[i] = "files\x00default\x00\x0020\x00" + strconv.Itoa(i)
	}
	for _, bc := range []struct {
		name string
		door bool
	}{{"admit-all", false}, {"doorkeeper", true}} {
		b.Run(bc.name, func(b *testing.B) {
			c := newPageCacheOf(pageCacheEntries, 250*time.Millisecond, (*Metrics)(nil).cacheCounters("bench"))
			if bc.door {
				c.door = new(doorkeeper)
			}
			rnd := rand.New(rand.NewPCG(1, 2))
			h := c.handler(func(*http.Request) (listRequest, error) {
				return listRequest{key: keys[rnd.IntN(len(keys))], render: render}, nil
			})
			req := httptest.NewRequest(http.MethodGet, "/api/v1/files?limit=20", nil)
			w := &discardWriter{header: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				clear(w.header)
				h.ServeHTTP(w, req)
			}
		})
	}
}
