package retention_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/cdnapi/cdnapi/internal/teststore"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/httpapi"
	"github.com/cdnapi/cdnapi/internal/pgtest"
	"github.com/cdnapi/cdnapi/internal/retention"
	"github.com/cdnapi/cdnapi/internal/storetest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

var engines = teststore.Engines

// openStore returns a fresh store of the engine, holding the fixture
// regions and assets. The assets spread over the week before
// storetest.Epoch.
func openStore(t *testing.T, open func(tb testing.TB) cdnapi.Store, n int) (cdnapi.Store, []cdnapi.Asset) {
	t.Helper()
	st := open(t)
	regions := storetest.Regions()
	assets := storetest.Assets(n, storetest.RegionCodes(regions), 7)
	if err := storetest.Writer(st).PutRegions(t.Context(), regions); err != nil {
		t.Fatal(err)
	}
	if err := storetest.Writer(st).PutAssets(t.Context(), assets); err != nil {
		t.Fatal(err)
	}
	return st, assets
}

// allAssets reads every asset in the store, newest first.
func allAssets(t *testing.T, st cdnapi.Store) []cdnapi.Asset {
	t.Helper()
	var all []cdnapi.Asset
	var after *cdnapi.Position
	for {
		page, err := st.ListAssets(t.Context(), cdnapi.AssetQuery{After: after, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, page...)
		if len(page) < 1000 {
			return all
		}
		p := page[len(page)-1].Position()
		after = &p
	}
}

// Pruning removes exactly the assets created before the cutoff, while a
// client pages through the assets over HTTP without a single error, and
// without a duplicate or a step back in any walk.
func TestPruneWhileReading(t *testing.T) {
	for _, e := range engines {
		t.Run(e.Name, func(t *testing.T) {
			t.Parallel()
			st, assets := openStore(t, e.Open, 3000)
			cutoff := storetest.Epoch.Add(-84 * time.Hour) // half of the week
			var kept []cdnapi.Asset
			for _, a := range assets {
				if !a.CreatedAt.Before(cutoff) {
					kept = append(kept, a)
				}
			}
			storetest.SortAssets(kept)
			if len(kept) == 0 || len(kept) == len(assets) {
				t.Fatalf("the fixture has %d of %d assets after the cutoff; want some on each side", len(kept), len(assets))
			}

			codec, err := cdnapi.NewCursorCodec([]byte("retention-test-cursor-secret"))
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(httpapi.NewEdge(httpapi.Config{Store: st, Cursors: codec}))
			defer srv.Close()

			ctx, stop := context.WithCancel(t.Context())
			var walks atomic.Int64
			var readErr error // written by the reader; read after it ends
			var failed atomic.Bool
			var reading sync.WaitGroup
			reading.Go(func() {
				for ctx.Err() == nil {
					if readErr = walkAssets(srv.URL); readErr != nil {
						failed.Store(true)
						return
					}
					walks.Add(1)
				}
			})

			// Small batches with a pause make many transactions, so the
			// walks interleave with the deletes.
			r, err := retention.Prune(t.Context(), st, cutoff, retention.Options{BatchSize: 50, Pause: time.Millisecond})
			n := r.Deleted
			if err != nil {
				t.Fatal(err)
			}
			for w := walks.Load(); walks.Load() < w+2 && !failed.Load(); {
				time.Sleep(time.Millisecond) // at least one whole walk after the prune
			}
			stop()
			reading.Wait()
			if readErr != nil {
				t.Fatalf("a reader failed while pruning: %v", readErr)
			}
			if want := len(assets) - len(kept); n != want {
				t.Errorf("Prune deleted %d assets, want %d", n, want)
			}
			if got := allAssets(t, st); !reflect.DeepEqual(got, kept) {
				t.Errorf("%d assets left, want exactly the %d created at or after the cutoff", len(got), len(kept))
			}
			if r, err := retention.Prune(t.Context(), st, cutoff, retention.Options{}); r.Deleted != 0 || r.Partitions != 0 || err != nil {
				t.Errorf("a second Prune = %+v (%v), want nothing done", r, err)
			}
		})
	}
}

// walkAssets pages through GET /api/v1/assets, following next_cursor, and
// fails on any answer but 200, and on a walk that repeats or steps back.
func walkAssets(base string) error {
	url := base + "/api/v1/assets?limit=100"
	var last *cdnapi.Position
	for pages := 0; ; pages++ {
		if pages > 1000 {
			return fmt.Errorf("the walk does not end")
		}
		res, err := http.Get(url)
		if err != nil {
			return err
		}
		var page struct {
			Data []struct {
				ID        string    `json:"id"`
				CreatedAt time.Time `json:"created_at"`
			} `json:"data"`
			NextCursor *string `json:"next_cursor"`
		}
		err = json.NewDecoder(res.Body).Decode(&page)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || err != nil {
			return fmt.Errorf("GET %s = %d (%v)", url, res.StatusCode, err)
		}
		for _, a := range page.Data {
			p := cdnapi.Position{CreatedAt: a.CreatedAt, ID: a.ID}
			if last != nil && storetest.Newest(*last, p) >= 0 {
				return fmt.Errorf("asset %s came after %s, out of order or twice", a.ID, last.ID)
			}
			last = &p
		}
		if page.NextCursor == nil {
			return nil
		}
		url = base + "/api/v1/assets?limit=100&cursor=" + *page.NextCursor
	}
}

// A Pruner run deletes what is older than its retention at its clock's now,
// and logs how much.
func TestPrunerRunOnce(t *testing.T) {
	st, assets := openStore(t, engines[0].Open, 500)
	now := storetest.Epoch.Add(30 * time.Minute)
	keep := 48 * time.Hour
	want := 0
	for _, a := range assets {
		if a.CreatedAt.Before(retention.Cutoff(now, keep)) {
			want++
		}
	}
	var logs bytes.Buffer
	p := retention.New(st, retention.Config{
		Retention: keep,
		Logger:    slog.New(slog.NewTextHandler(&logs, nil)),
		Now:       func() time.Time { return now },
	})
	if r := p.RunOnce(t.Context()); r.Deleted != want {
		t.Errorf("RunOnce deleted %d, want %d", r.Deleted, want)
	}
	if line := fmt.Sprintf("deleted=%d", want); !strings.Contains(logs.String(), line) {
		t.Errorf("log %q lacks %q", logs.String(), line)
	}
	if got := len(allAssets(t, st)); got != len(assets)-want {
		t.Errorf("%d assets left, want %d", got, len(assets)-want)
	}
}

// Run prunes at once, and returns when its context ends.
func TestPrunerRunStopsWithContext(t *testing.T) {
	st, assets := openStore(t, engines[0].Open, 100)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	p := retention.New(st, retention.Config{Retention: time.Nanosecond, Logger: slog.New(slog.DiscardHandler)})
	p.Run(ctx) // the one run at start meets a canceled context and stops
	if got := len(allAssets(t, st)); got != len(assets) {
		t.Errorf("a canceled run left %d of %d assets", got, len(assets))
	}
}

func TestCutoff(t *testing.T) {
	now := time.Date(2026, 11, 20, 12, 0, 0, 999_999_999, time.FixedZone("CET", 3600))
	want := time.Date(2026, 11, 13, 11, 0, 0, 0, time.UTC)
	if got := retention.Cutoff(now, 7*24*time.Hour); !got.Equal(want) || got.Location() != time.UTC {
		t.Errorf("Cutoff = %v, want %v", got, want)
	}
}

// RunOnce also deletes the status history older than 90 days, on every
// engine, and keeps open incidents whatever their age.
func TestPrunerPrunesHistory(t *testing.T) {
	for _, eng := range engines {
		t.Run(eng.Name, func(t *testing.T) {
			st := eng.Open(t)
			h := st.(cdnapi.StatusHistory)
			ctx, now := t.Context(), storetest.Epoch
			for _, days := range []int{120, 91, 89} {
				must(t, h.RecordStatusChange(ctx, cdnapi.StatusChange{Kind: cdnapi.SubjectComponent, Subject: cdnapi.ComponentAPI,
					Status: cdnapi.StatusOperational, Source: cdnapi.SourceProbe, At: now.Add(-time.Duration(days) * 24 * time.Hour)}))
			}
			for _, u := range []cdnapi.IncidentUpdate{
				{Component: cdnapi.ComponentAPI, Status: cdnapi.StatusMajorOutage, At: now.AddDate(0, 0, -100)},
				{Component: cdnapi.ComponentAPI, Status: cdnapi.StatusOperational, At: now.AddDate(0, 0, -95)},
				{Component: cdnapi.ComponentStorage, Status: cdnapi.StatusMajorOutage, At: now.AddDate(0, 0, -100)},
			} {
				must(t, h.UpdateIncident(ctx, u))
			}
			p := retention.New(st, retention.Config{Retention: time.Hour, Logger: slog.New(slog.DiscardHandler),
				Now: func() time.Time { return now }, Options: retention.Options{BatchSize: 1, Pause: time.Millisecond}})
			p.RunOnce(ctx)
			changes, err := h.StatusChanges(ctx, cdnapi.SubjectComponent, time.Time{}, 10)
			must(t, err)
			if len(changes) != 1 || !changes[0].At.Equal(now.AddDate(0, 0, -89)) {
				t.Errorf("changes left %+v, want the one of 89 days ago", changes)
			}
			incidents, err := h.ListIncidents(ctx, cdnapi.IncidentQuery{Limit: 10})
			must(t, err)
			if len(incidents) != 1 || !incidents[0].Open() {
				t.Errorf("incidents left %+v, want the open one", incidents)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// On PostgreSQL, a Pruner's run makes the partitions from the cutoff to
// PartitionsAhead after now, moving into them the rows that waited in the
// default partition, and drops the days that expired whole; with a
// retention of 0 it only makes the coming days' partitions and deletes
// nothing. The lists show the same assets throughout.
func TestPrunerKeepsPartitions(t *testing.T) {
	st, assets := openStore(t, func(tb testing.TB) cdnapi.Store { return teststore.Postgres(tb) }, 2000) // the week before storetest.Epoch
	p := st.(cdnapi.AssetPartitioner)
	ctx := t.Context()
	now := storetest.Epoch.Add(30 * time.Minute)
	keep := 72 * time.Hour
	cutoff := retention.Cutoff(now, keep)

	// Retention off: the partitions ahead of the clock, nothing deleted.
	off := retention.New(st, retention.Config{Logger: slog.New(slog.DiscardHandler), Now: func() time.Time { return now }})
	if r := off.RunOnce(ctx); r != (retention.Result{}) {
		t.Errorf("RunOnce with retention 0 = %+v, want nothing pruned", r)
	}
	if n, err := p.MakeAssetPartitions(ctx, now, now.Add(retention.PartitionsAhead)); err != nil || n != 0 {
		t.Errorf("after a run with retention 0, %d partitions ahead were missing (%v)", n, err)
	}
	if got := len(allAssets(t, st)); got != len(assets) {
		t.Fatalf("retention 0 left %d of %d assets", got, len(assets))
	}

	var logs bytes.Buffer
	pr := retention.New(st, retention.Config{Retention: keep, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Now: func() time.Time { return now }, Options: retention.Options{Pause: time.Millisecond}})
	pr.RunOnce(ctx) // makes the days from the cutoff on; the days before are in the default partition
	if n, err := p.MakeAssetPartitions(ctx, cutoff, now.Add(retention.PartitionsAhead)); err != nil || n != 0 {
		t.Errorf("after a run, %d partitions from the cutoff on were missing (%v)", n, err)
	}
	var kept []cdnapi.Asset
	for _, a := range assets {
		if !a.CreatedAt.Before(cutoff) {
			kept = append(kept, a)
		}
	}
	storetest.SortAssets(kept)
	if got := allAssets(t, st); !reflect.DeepEqual(got, kept) {
		t.Errorf("%d assets left, want the %d at or after the cutoff", len(got), len(kept))
	}
	// A day later, the day that straddled the cutoff has expired whole:
	// it is dropped, not deleted row by row.
	now = now.Add(24 * time.Hour)
	r := pr.RunOnce(ctx)
	if r.Partitions < 1 {
		t.Errorf("a day later, RunOnce = %+v; want the expired day's partition dropped; log:\n%s", r, logs.String())
	}
	if !strings.Contains(logs.String(), "partitions_dropped=") {
		t.Errorf("the log does not say partitions were dropped:\n%s", logs.String())
	}
}
