package edgelog_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/edgelog"
	"github.com/cdnapi/cdnapi/internal/pgtest"
	"github.com/cdnapi/cdnapi/internal/storetest"
	"github.com/cdnapi/cdnapi/internal/teststore"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// line returns the log line of request i of region, answered status.
func line(i int, region string, status int) string {
	return fmt.Sprintf(`{"request_id":"%032x","msec":%d.%03d,"region":"%s","request_method":"GET","uri":"/f/%d.bin","status":%d,"body_bytes_sent":%d,"upstream_cache_status":"HIT"}`,
		i, time.Now().Unix(), i%1000, region, i, status, 100+i)
}

// newStore returns a store of engine with regions FRA1 and SIN1.
func newStore(t *testing.T, engine teststore.Engine) cdnapi.Store {
	st := engine.Open(t)
	if err := storetest.Writer(st).PutRegions(t.Context(), []cdnapi.Region{
		{Code: "FRA1", Name: "Frankfurt", Zone: "eu-central", Country: "DE", Status: cdnapi.StatusOperational},
		{Code: "SIN1", Name: "Singapore", Zone: "ap-southeast", Country: "SG", Status: cdnapi.StatusOperational},
	}); err != nil {
		t.Fatal(err)
	}
	return st
}

func countAssets(t *testing.T, st cdnapi.Store) map[string]int {
	t.Helper()
	ids := map[string]int{}
	q := cdnapi.AssetQuery{Limit: 100}
	for {
		page, err := st.ListAssets(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range page {
			ids[a.ID]++
		}
		if len(page) < q.Limit {
			return ids
		}
		p := page[len(page)-1].Position()
		q.After = &p
	}
}

// TestReceive sends one batch of every kind of line, twice, on each
// engine: the listed lines of the key's region are one row each, the
// others counted as what they are and never listed.
func TestReceive(t *testing.T) {
	for _, engine := range teststore.Engines {
		t.Run(engine.Name, func(t *testing.T) {
			st := newStore(t, engine)
			var rejects bytes.Buffer
			r := edgelog.New(st, edgelog.Config{Rejects: &rejects})
			body := strings.Join([]string{
				line(1, "FRA1", 200),
				"",
				line(2, "FRA1", 404), // skipped
				line(3, "SIN1", 200), // another region
				`192.0.2.1 - - [25/Nov/2025:12:03:07 +0000] "GET /a HTTP/1.1" 200 5 "-" "curl/8"`,
				strings.Replace(line(4, "FRA1", 200), `"status"`, `"remote_addr":"192.0.2.1","status"`, 1) + "\r",
				strings.Replace(line(5, "FRA1", 200), `"msec":`, `"msec":1764072187.1,"x":`, 1),
				`{"request_id":"` + strings.Repeat("a", 70_000) + `"}`,
			}, "\n") + "\n"
			want := edgelog.Counts{Lines: 7, Taken: 3, Skipped: 1, Rejected: 3, OtherRegion: 1, FirstRejectionLine: 3}
			for round := range 2 {
				c, err := r.Receive(t.Context(), "FRA1", []byte(body))
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(c.FirstRejection, "SIN1") {
					t.Errorf("FirstRejection = %q, want the line's region named", c.FirstRejection)
				}
				c.FirstRejection = ""
				if c != want {
					t.Errorf("round %d: Receive = %+v, want %+v", round, c, want)
				}
			}
			ids := countAssets(t, st)
			for _, i := range []int{1, 4, 5} {
				if id := fmt.Sprintf("ast_%032x", i); ids[id] != 1 {
					t.Errorf("asset %s listed %d times, want once", id, ids[id])
				}
			}
			if len(ids) != 3 {
				t.Errorf("%d assets listed, want 3: %v", len(ids), ids)
			}
			if n := strings.Count(rejects.String(), "\n"); n != 6 {
				t.Errorf("%d lines kept as rejected, want 6 (3 lines, twice)", n)
			}
		})
	}
}

// TestReceiveArray reads a batch framed as a JSON array, of objects (what
// syslog-ng sends with body-prefix("[") delimiter(",") body-suffix("]"))
// or of strings holding lines.
func TestReceiveArray(t *testing.T) {
	st := newStore(t, teststore.Engines[0])
	r := edgelog.New(st, edgelog.Config{})
	objects := "[" + line(1, "FRA1", 200) + ",\n" + line(2, "FRA1", 200) + "]"
	c, err := r.Receive(t.Context(), "FRA1", []byte(objects))
	if err != nil || c.Taken != 2 || c.Lines != 2 {
		t.Fatalf("Receive(array of objects) = %+v, %v", c, err)
	}
	strs := fmt.Sprintf("[%q, %q]", line(3, "FRA1", 200), line(4, "FRA1", 200))
	c, err = r.Receive(t.Context(), "FRA1", []byte(strs))
	if err != nil || c.Taken != 2 {
		t.Fatalf("Receive(array of strings) = %+v, %v", c, err)
	}
	// A body that starts with [ and is not one array is read as lines: a
	// cut array is one line, rejected; NDJSON whose first line is junk
	// that starts with [ keeps its valid lines.
	c, err = r.Receive(t.Context(), "FRA1", []byte("["+line(5, "FRA1", 200)))
	if err != nil || c.Lines != 1 || c.Rejected != 1 || c.Taken != 0 {
		t.Errorf("Receive(a cut array) = %+v, %v, want its one line rejected", c, err)
	}
	ndjson := "[junk] from a shipper\n" + line(6, "FRA1", 200) + "\n" + line(7, "FRA1", 200) + "\n"
	c, err = r.Receive(t.Context(), "FRA1", []byte(ndjson))
	if err != nil || c.Lines != 3 || c.Rejected != 1 || c.Taken != 2 || c.FirstRejectionLine != 1 {
		t.Errorf("Receive(NDJSON whose first line starts with [) = %+v, %v, want 2 taken, line 1 rejected", c, err)
	}
	if n := len(countAssets(t, st)); n != 6 {
		t.Errorf("%d assets, want 6", n)
	}
}

// TestReceiveNginxRefusal: nginx's own 400 or 414 to a request it could
// not read has no region, as the follower sees it; through an edge key it
// is skipped, as follow skips it, not rejected as another region's line.
func TestReceiveNginxRefusal(t *testing.T) {
	st := newStore(t, teststore.Engines[0])
	var rejects bytes.Buffer
	r := edgelog.New(st, edgelog.Config{Rejects: &rejects})
	refused := `{"request_id":"00000000000000000000000000000009","msec":1764072187.100,"region":"","request_method":"","uri":"","status":400,"body_bytes_sent":150,"upstream_cache_status":""}`
	c, err := r.Receive(t.Context(), "FRA1", []byte(refused+"\n"+line(1, "FRA1", 200)+"\n"))
	if err != nil || c.Lines != 2 || c.Taken != 1 || c.Skipped != 1 || c.Rejected != 0 {
		t.Errorf("Receive = %+v, %v; want nginx's refusal skipped and the other line taken", c, err)
	}
	if rejects.Len() != 0 {
		t.Errorf("rejects kept: %q", rejects.String())
	}
}

// TestReceiveNewRegion: a region added while the receiver runs is read
// again when a line names it, at most every few seconds.
func TestReceiveNewRegion(t *testing.T) {
	st := newStore(t, teststore.Engines[0])
	now := time.Now()
	r := edgelog.New(st, edgelog.Config{Now: func() time.Time { return now }})
	if c, err := r.Receive(t.Context(), "FRA1", []byte(line(1, "FRA1", 200))); err != nil || c.Taken != 1 {
		t.Fatalf("Receive = %+v, %v", c, err)
	}
	if err := storetest.Writer(st).PutRegions(t.Context(), []cdnapi.Region{
		{Code: "IAD1", Name: "Ashburn", Zone: "us-east", Country: "US", Status: cdnapi.StatusOperational},
	}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(6 * time.Second)
	if c, err := r.Receive(t.Context(), "IAD1", []byte(line(2, "IAD1", 200))); err != nil || c.Taken != 1 {
		t.Fatalf("Receive of a new region = %+v, %v", c, err)
	}
}

// failingStore is a store whose writes fail, as one that is down.
type failingStore struct{ cdnapi.Store }

func (failingStore) Write(ctx context.Context, fn func(w cdnapi.Writer) error) error {
	return errors.New("connection refused")
}

// TestReceiveStoreDown: a batch the store does not commit is an error, and
// nothing of it is counted or kept as rejected.
func TestReceiveStoreDown(t *testing.T) {
	st := newStore(t, teststore.Engines[0])
	var rejects bytes.Buffer
	r := edgelog.New(failingStore{st}, edgelog.Config{Rejects: &rejects})
	c, err := r.Receive(t.Context(), "FRA1", []byte(line(1, "FRA1", 200)+"\nbad\n"))
	if err == nil || c != (edgelog.Counts{}) || rejects.Len() != 0 {
		t.Errorf("Receive = %+v, %v, rejects %q; want an error and nothing", c, err, rejects.String())
	}
}

// TestReceiveConcurrent sends batches from several senders at once, on
// each engine: their commits are merged, and every line is one row.
func TestReceiveConcurrent(t *testing.T) {
	for _, engine := range teststore.Engines {
		t.Run(engine.Name, func(t *testing.T) {
			st := newStore(t, engine)
			r := edgelog.New(st, edgelog.Config{})
			defer r.Close()
			const senders, batches, lines = 4, 10, 200
			var wg sync.WaitGroup
			for s := range senders {
				wg.Go(func() {
					for b := range batches {
						var body strings.Builder
						for l := range lines {
							// Each batch repeats half of the previous one, as a retry would.
							body.WriteString(line((s*batches+b)*lines/2+l, "FRA1", 200) + "\n")
						}
						if c, err := r.Receive(t.Context(), "FRA1", []byte(body.String())); err != nil || c.Taken != lines {
							t.Errorf("Receive = %+v, %v", c, err)
						}
					}
				})
			}
			wg.Wait()
			ids := countAssets(t, st)
			if want := (senders*batches + 1) * lines / 2; len(ids) != want {
				t.Errorf("%d assets, want %d", len(ids), want)
			}
			for id, n := range ids {
				if n != 1 {
					t.Errorf("%s listed %d times", id, n)
				}
			}
		})
	}
}

// TestReceiveGivenUp: a batch whose request ended is not written, and an
// error says so.
func TestReceiveGivenUp(t *testing.T) {
	st := newStore(t, teststore.Engines[0])
	r := edgelog.New(st, edgelog.Config{})
	defer r.Close()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := r.Receive(ctx, "FRA1", []byte(line(1, "FRA1", 200))); err == nil {
		t.Error("Receive with an ended context succeeded")
	}
	r.Close()
	if _, err := r.Receive(t.Context(), "FRA1", []byte(line(2, "FRA1", 200))); err == nil {
		t.Error("Receive after Close succeeded")
	}
	if n := len(countAssets(t, st)); n != 0 {
		t.Errorf("%d assets written", n)
	}
}
