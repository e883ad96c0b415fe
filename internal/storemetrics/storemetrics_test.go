package storemetrics_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/storemetrics"
	"github.com/cdnapi/cdnapi/internal/storetest"
	"github.com/cdnapi/cdnapi/internal/teststore"
)

func TestErrorKind(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{nil, ""},
		{cdnapi.ErrNotFound, ""},
		{fmt.Errorf("region: %w", cdnapi.ErrNotFound), ""},
		{cdnapi.Errorf(cdnapi.CodeNotFound, "", "no such key"), ""},
		{fmt.Errorf("query: %w", context.DeadlineExceeded), storemetrics.KindTimeout},
		{context.Canceled, storemetrics.KindCanceled},
		{cdnapi.Errorf(cdnapi.CodeParameterInvalid, "status", "unknown status"), storemetrics.KindRejected},
		{errors.New("dial tcp: connection refused"), storemetrics.KindUnavailable},
	}
	for _, tt := range tests {
		if got := storemetrics.ErrorKind(tt.err); got != tt.want {
			t.Errorf("ErrorKind(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

// TestMeasuredStore runs calls through a wrapped SQLite store and checks
// that each moves its metric: latency by operation, errors by kind once the
// store is stopped, and pruned rows.
func TestMeasuredStore(t *testing.T) {
	ctx := context.Background()
	inner := teststore.SQLite(t)
	reg := prometheus.NewRegistry()
	st := storemetrics.Wrap(inner, "sqlite", storemetrics.NewMetrics(reg))

	regions := storetest.Regions()
	assets := storetest.Assets(30, storetest.RegionCodes(regions), 1)
	if err := st.Write(ctx, func(w cdnapi.Writer) error {
		if err := w.PutRegions(ctx, regions); err != nil {
			return err
		}
		return w.PutAssets(ctx, assets)
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ListAssets(ctx, cdnapi.AssetQuery{Limit: 10}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ListAssets(ctx, cdnapi.AssetQuery{Limit: 10}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Region(ctx, "ZZZ9"); !errors.Is(err, cdnapi.ErrNotFound) {
		t.Fatalf("Region(ZZZ9): %v, want ErrNotFound", err)
	}
	n, err := st.DeleteAssetsBefore(ctx, time.Now().Add(24*365*time.Hour), 1000)
	if err != nil || n != len(assets) {
		t.Fatalf("DeleteAssetsBefore = %d, %v; want %d", n, err, len(assets))
	}

	for op, want := range map[string]float64{"write": 1, "list_assets": 2, "region": 1, "delete_assets_before": 1, "ping": 0} {
		if got := value(t, reg, "cdnapi_store_call_duration_seconds", "engine", "sqlite", "operation", op); got != want {
			t.Errorf("%s: %v calls measured, want %v", op, got, want)
		}
	}
	if got := value(t, reg, "cdnapi_prune_deleted_rows_total", "engine", "sqlite", "table", "assets"); got != float64(len(assets)) {
		t.Errorf("deleted assets = %v, want %d", got, len(assets))
	}
	if got := testutil.CollectAndCount(reg, "cdnapi_store_errors_total"); got != 0 {
		t.Errorf("%d error series before any error (not found is an answer), want 0", got)
	}

	// A stopped store: every call fails, and is counted as unavailable.
	inner.Close()
	if err := st.Ping(ctx); err == nil {
		t.Fatal("Ping of a closed store succeeded")
	}
	if _, err := st.ListAssets(ctx, cdnapi.AssetQuery{Limit: 10}); err == nil {
		t.Fatal("ListAssets of a closed store succeeded")
	}
	for _, op := range []string{"ping", "list_assets"} {
		if got := value(t, reg, "cdnapi_store_errors_total", "engine", "sqlite", "operation", op, "kind", "unavailable"); got != 1 {
			t.Errorf("errors_total{operation=%q,kind=unavailable} = %v, want 1", op, got)
		}
	}
}

// value returns the value of the series of the metric name that has the
// given label pairs, or its sample count for a histogram, or -1 if reg has
// no such series.
func value(t *testing.T, reg prometheus.Gatherer, name string, labelPairs ...string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for i := 0; i+1 < len(labelPairs); i += 2 {
				if have[labelPairs[i]] != labelPairs[i+1] {
					continue series
				}
			}
			switch {
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount())
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			}
		}
	}
	return -1
}

// BenchmarkListFiles compares a page of files read from SQLite directly
// and through the decorator: the measuring costs a clock read and a
// histogram observation per call.
func BenchmarkListFiles(b *testing.B) {
	ctx := context.Background()
	inner := teststore.SQLite(b)
	files := storetest.Files(1000, "default", 1)
	if err := inner.Write(ctx, func(w cdnapi.Writer) error { return w.PutFiles(ctx, files) }); err != nil {
		b.Fatal(err)
	}
	q := cdnapi.FileQuery{Project: "default", Limit: 20}
	for _, bb := range []struct {
		name string
		st   cdnapi.FileReader
	}{
		{"direct", inner},
		{"measured", storemetrics.Wrap(inner, "sqlite", storemetrics.NewMetrics(prometheus.NewRegistry()))},
	} {
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bb.st.ListFiles(ctx, q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
