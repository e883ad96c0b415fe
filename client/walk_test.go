package client_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/client"
	"github.com/cdnapi/cdnapi/internal/storetest"
)

// fixture is what a test wrote into a server's store, in list order, as the
// API shows it (files without their project).
type fixture struct {
	files   []cdnapi.File
	assets  []cdnapi.Asset
	regions []cdnapi.Region
}

// fill writes the regions, files files of the default project (and a few of
// another, which must never be listed) and assets assets.
func fill(t testing.TB, s *server, files, assets int) fixture {
	t.Helper()
	ctx := context.Background()
	st := s.store.current()
	f := fixture{regions: storetest.Regions(), files: storetest.Files(files, "default", 1),
		assets: storetest.Assets(assets, storetest.RegionCodes(storetest.Regions()), 2)}
	must(t, storetest.Writer(st).PutRegions(ctx, f.regions))
	must(t, storetest.Writer(st).PutFiles(ctx, f.files))
	must(t, storetest.Writer(st).PutFiles(ctx, storetest.Files(30, "other", 3)))
	must(t, storetest.Writer(st).PutAssets(ctx, f.assets))
	storetest.SortRegions(f.regions)
	storetest.SortFiles(f.files)
	storetest.SortAssets(f.assets)
	for i := range f.files {
		f.files[i].Project = ""
	}
	return f
}

func newClient(t testing.TB, s *server, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New(s.api, s.edge, opts...)
	must(t, err)
	return c
}

// collect walks seq to its end and fails t on an error.
func collect[T any](t testing.TB, seq func(func(T, error) bool)) []T {
	t.Helper()
	var all []T
	for item, err := range seq {
		if err != nil {
			t.Fatalf("after %d items: %v", len(all), err)
		}
		all = append(all, item)
	}
	return all
}

// sameItems fails t unless got equals want, item by item. Times are
// compared as instants.
func sameItems[T any](t testing.TB, got, want []T, equal func(a, b T) bool) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("got %d items, want %d", len(got), len(want))
	}
	for i := range min(len(got), len(want)) {
		if !equal(got[i], want[i]) {
			t.Fatalf("item %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func sameFile(a, b cdnapi.File) bool {
	return a.ID == b.ID && a.Project == b.Project && a.CreatedAt.Equal(b.CreatedAt) &&
		a.Filename == b.Filename && a.Bytes == b.Bytes && a.Checksum == b.Checksum
}

func sameAsset(a, b cdnapi.Asset) bool {
	return a.ID == b.ID && a.CreatedAt.Equal(b.CreatedAt) && a.Path == b.Path &&
		a.Bytes == b.Bytes && a.CacheStatus == b.CacheStatus && a.Region == b.Region
}

// A walk of 10,000 files, 7 to a page, yields the store's files of the
// project, in order, each once.
func TestFilesWalkEqualsTheStore(t *testing.T) {
	forEngine(t, func(t *testing.T, e engine) {
		s := startServer(t, e, nil)
		f := fill(t, s, 10_000, 0)
		c := newClient(t, s)
		got := collect(t, c.Files(t.Context(), client.ListFilesParams{Limit: 7}))
		sameItems(t, got, f.files, sameFile)
		if n := len(s.answers()); n != (10_000+6)/7 {
			t.Errorf("the walk took %d requests, want %d", n, (10_000+6)/7)
		}
	})
}

func TestAssetsWalkEqualsTheStore(t *testing.T) {
	forEngine(t, func(t *testing.T, e engine) {
		s := startServer(t, e, nil)
		f := fill(t, s, 0, 400)
		c := newClient(t, s)
		ctx := t.Context()
		sameItems(t, collect(t, c.Assets(ctx, client.ListAssetsParams{Limit: 13})), f.assets, sameAsset)

		var fra1 []cdnapi.Asset
		for _, a := range f.assets {
			if a.Region == "FRA1" {
				fra1 = append(fra1, a)
			}
		}
		if len(fra1) < 14 {
			t.Fatalf("only %d FRA1 assets in the fixture; the walk needs several pages", len(fra1))
		}
		sameItems(t, collect(t, c.Assets(ctx, client.ListAssetsParams{Limit: 13, Region: "FRA1"})), fra1, sameAsset)

		regions, err := c.ListRegions(ctx)
		must(t, err)
		if !slices.Equal(regions.Items, f.regions) || regions.HasMore || regions.NextCursor != "" {
			t.Errorf("regions = %+v, want %+v on one page", regions, f.regions)
		}
	})
}

// Files inserted during a walk never cause a repeat or a skip: newer ones
// are not in the walk, older ones are, at their place.
func TestWalkDuringInserts(t *testing.T) {
	forEngine(t, func(t *testing.T, e engine) {
		s := startServer(t, e, nil)
		f := fill(t, s, 500, 0)
		c := newClient(t, s)
		ctx := t.Context()
		newest, oldest := f.files[0].CreatedAt, f.files[len(f.files)-1].CreatedAt
		want := map[string]bool{}
		for _, file := range f.files {
			want[file.ID] = true
		}

		seen := map[string]bool{}
		var last cdnapi.File
		n := 0
		for file, err := range c.Files(ctx, client.ListFilesParams{Limit: 9}) {
			must(t, err)
			if seen[file.ID] {
				t.Fatalf("file %s yielded twice", file.ID)
			}
			if n > 0 && storetest.Newest(last.Position(), file.Position()) >= 0 {
				t.Fatalf("file %s came after %s, out of order", file.ID, last.ID)
			}
			seen[file.ID], last = true, file
			n++
			if n%20 == 0 {
				// One file newer than any (before the walk's position) and
				// one older than any (after it).
				k := n / 20
				before := cdnapi.File{ID: fmt.Sprintf("fil_zNew%d", k), Project: "default", CreatedAt: newest.Add(time.Duration(k) * time.Second),
					Filename: "new.txt", Checksum: f.files[0].Checksum}
				after := cdnapi.File{ID: fmt.Sprintf("fil_zOld%d", k), Project: "default", CreatedAt: oldest.Add(-time.Duration(k) * time.Second),
					Filename: "old.txt", Checksum: f.files[0].Checksum}
				must(t, storetest.Writer(s.store.current()).PutFiles(ctx, []cdnapi.File{before, after}))
				want[after.ID] = true
			}
		}
		for id := range want {
			if !seen[id] {
				t.Errorf("file %s was skipped", id)
			}
		}
		for id := range seen {
			if !want[id] {
				t.Errorf("file %s, newer than the walk's position when inserted, was yielded", id)
			}
		}
	})
}

// Breaking out of a walk stops it: no request is made for the pages it did
// not reach.
func TestWalkBreak(t *testing.T) {
	s := startServer(t, engines[0], nil)
	fill(t, s, 100, 0)
	c := newClient(t, s)
	n := 0
	for _, err := range c.Files(t.Context(), client.ListFilesParams{Limit: 7}) {
		must(t, err)
		if n++; n == 10 {
			break
		}
	}
	if got := s.answers(); !slices.Equal(got, []int{200, 200}) {
		t.Errorf("a walk broken after 10 files of 7 a page made requests answered %v, want two 200s", got)
	}
}

// A context that ends mid-walk ends the walk with its error, once, and no
// further requests; a context that has ended makes no request at all.
func TestCancelledContext(t *testing.T) {
	s := startServer(t, engines[0], nil)
	fill(t, s, 100, 0)
	c := newClient(t, s)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var items, errs int
	for _, err := range c.Files(ctx, client.ListFilesParams{Limit: 7}) {
		if err != nil {
			errs++
			if !errors.Is(err, context.Canceled) {
				t.Errorf("walk error %v, want context.Canceled", err)
			}
			continue
		}
		if items++; items == 10 {
			cancel()
		}
	}
	if items != 10 || errs != 1 {
		t.Errorf("after cancel: %d items and %d errors, want 10 and 1", items, errs)
	}
	if got := s.answers(); len(got) != 2 {
		t.Errorf("%d requests, want 2", len(got))
	}

	_, err := c.ListFiles(ctx, client.ListFilesParams{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("ListFiles on an ended context: %v", err)
	}
	if _, ok := errors.AsType[*client.Error](err); ok {
		t.Errorf("a cancelled request became an API error: %v", err)
	}
	if got := s.answers(); len(got) != 0 {
		t.Errorf("an ended context still made %d requests", len(got))
	}
}
