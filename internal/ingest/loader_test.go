package ingest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/storetest"
)

// newAssetLoader returns a Loader that writes assets into st, each batch in
// a transaction of its own, checked against st's regions.
func newAssetLoader(ctx context.Context, st cdnapi.Store, size int) *Loader[cdnapi.Asset] {
	v := NewValidator(storetest.Regions())
	return NewLoader(ctx, v.Asset, storetest.Writer(st).PutAssets, size)
}

func TestLoaderWritesEveryRecord(t *testing.T) {
	regions := storetest.RegionCodes(storetest.Regions())
	for _, n := range []int{0, 1, 10, 25} {
		for _, size := range []int{1, 7, 0} {
			t.Run(fmt.Sprintf("%d records in batches of %d", n, size), func(t *testing.T) {
				t.Parallel()
				st := engines[0].Open(t)
				want := storetest.Assets(n, regions, uint64(n))
				l := newAssetLoader(context.Background(), st, size)
				for _, a := range want {
					if err := l.Add(a); err != nil {
						t.Fatal(err)
					}
				}
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				if l.Written() != int64(n) {
					t.Errorf("Written() = %d, want %d", l.Written(), n)
				}
				storetest.SortAssets(want)
				if got := takeSnapshot(t, st).Assets; len(got) != n || n > 0 && !reflect.DeepEqual(got, want) {
					t.Errorf("stored %d assets, want the %d added", len(got), n)
				}
			})
		}
	}
}

func TestLoaderRefusesInvalidRecords(t *testing.T) {
	st := engines[0].Open(t)
	assets := storetest.Assets(3, []string{"FRA1"}, 1)
	bad := assets[1]
	bad.Path = "no-slash"
	l := newAssetLoader(context.Background(), st, 0)
	for i, a := range []cdnapi.Asset{assets[0], bad, assets[2]} {
		err := l.Add(a)
		if fe, ok := errors.AsType[*FieldError](err); (i == 1) != ok || ok && fe.Field != "path" {
			t.Errorf("Add of record %d = %v", i, err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got := takeSnapshot(t, st).Assets; len(got) != 2 {
		t.Errorf("stored %d assets, want the 2 valid ones", len(got))
	}
	if err := l.Add(assets[0]); err == nil {
		t.Error("Add after Close succeeded")
	}
}

func TestLoaderReportsWriteFailure(t *testing.T) {
	st := engines[0].Open(t)
	st.Close()
	l := newAssetLoader(context.Background(), st, 1)
	var addErr error
	// With batches of one and a queue of one, the writing goroutine has
	// failed the first batch by the time it takes the third: the fourth
	// Add at the latest sees the failure.
	for _, a := range storetest.Assets(4, []string{"FRA1"}, 1) {
		if addErr = l.Add(a); addErr != nil {
			break
		}
	}
	if addErr == nil {
		t.Error("Add kept accepting records after a write failed")
	}
	if err := l.Close(); err == nil || err.Error() != addErr.Error() {
		t.Errorf("Close = %v, want the write failure %v", err, addErr)
	}
}

func TestLoaderAbortWritesNothingMore(t *testing.T) {
	st := engines[0].Open(t)
	l := newAssetLoader(context.Background(), st, 10)
	for _, a := range storetest.Assets(5, []string{"FRA1"}, 1) {
		if err := l.Add(a); err != nil {
			t.Fatal(err)
		}
	}
	l.Abort()
	l.Abort() // a second Abort does nothing
	if got := takeSnapshot(t, st).Assets; len(got) != 0 {
		t.Errorf("stored %d assets after Abort of a partial batch", len(got))
	}
	if err := l.Close(); err == nil {
		t.Error("Close after Abort succeeded")
	}
}

func TestLoaderStopsWhenCanceled(t *testing.T) {
	st := engines[0].Open(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	l := newAssetLoader(ctx, st, 2)
	for _, a := range storetest.Assets(3, []string{"FRA1"}, 1) {
		l.Add(a)
	}
	if err := l.Close(); !errors.Is(err, context.Canceled) {
		t.Errorf("Close = %v, want context.Canceled", err)
	}
	if got := takeSnapshot(t, st).Assets; len(got) != 0 {
		t.Errorf("stored %d assets under a canceled context", len(got))
	}
}
