package storemetrics_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/pgtest"
	"github.com/cdnapi/cdnapi/internal/postgres"
	"github.com/cdnapi/cdnapi/internal/sqlite"
	"github.com/cdnapi/cdnapi/internal/storemetrics"
	"github.com/cdnapi/cdnapi/internal/storetest"
	"github.com/cdnapi/cdnapi/internal/teststore"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func TestErrorKind(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{nil, ""},
		{cdnapi.ErrNotFound, ""},
		{fmt.Errorf("region: %w", cdnapi.ErrNotFound), ""},
		{cdnapi.Errorf(cdnapi.CodeNotFound, "", "no such key"), ""},
		{fmt.Errorf("postgres: ping: %w: the read replica does not answer", cdnapi.ErrDegraded), ""},
		{fmt.Errorf("query: %w", context.DeadlineExceeded), storemetrics.KindTimeout},
		{context.Canceled, storemetrics.KindCanceled},
		{cdnapi.Errorf(cdnapi.CodeParameterInvalid, "status", "unknown status"), storemetrics.KindRejected},
		{fmt.Errorf("sqlite: move log position of a: %w", cdnapi.ErrPositionMoved), storemetrics.KindRejected},
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
	st := storemetrics.Wrap(inner, storemetrics.NewMetrics(reg))

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
	if _, err := st.LogPositions(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := st.LogPosition(ctx, "edge"); !errors.Is(err, cdnapi.ErrNotFound) {
		t.Fatalf("LogPosition(edge): %v, want ErrNotFound", err)
	}
	if err := st.DeleteLogPosition(ctx, "edge"); !errors.Is(err, cdnapi.ErrNotFound) {
		t.Fatalf("DeleteLogPosition(edge): %v, want ErrNotFound", err)
	}

	for op, want := range map[string]float64{"write": 1, "list_assets": 2, "region": 1, "delete_assets_before": 1, "ping": 0,
		"log_position": 1, "log_positions": 1, "delete_log_position": 1} {
		if got := value(t, reg, "cdnapi_store_call_duration_seconds", "engine", "sqlite", "operation", op); got != want {
			t.Errorf("%s: %v calls measured, want %v", op, got, want)
		}
	}
	if got := value(t, reg, "cdnapi_prune_deleted_rows_total", "engine", "sqlite", "table", "assets"); got != float64(len(assets)) {
		t.Errorf("deleted assets = %v, want %d", got, len(assets))
	}
	// Every operation's error counters exist from the start, at 0, so that
	// an alert on their rate needs no `or vector(0)`; not found is an
	// answer, and counts in none of them.
	if got, want := testutil.CollectAndCount(reg, "cdnapi_store_errors_total"), len(storemetrics.OpNames)*len(storemetrics.ErrorKinds); got != want {
		t.Errorf("%d error series before any error, want %d (every operation and kind)", got, want)
	}
	for _, op := range storemetrics.OpNames {
		for _, kind := range storemetrics.ErrorKinds {
			if got := value(t, reg, "cdnapi_store_errors_total", "engine", "sqlite", "operation", op, "kind", kind); got != 0 {
				t.Errorf("errors_total{operation=%q,kind=%q} = %v before any error, want 0", op, kind, got)
			}
		}
	}

	// A follower that lost the race for its log position: the store
	// answered, and refused the write.
	err = st.Write(ctx, func(w cdnapi.Writer) error {
		return w.MoveLogPosition(ctx, cdnapi.LogPosition{Stream: "edge", Offset: 1}, cdnapi.LogPosition{Stream: "edge", Offset: 2})
	})
	if !errors.Is(err, cdnapi.ErrPositionMoved) {
		t.Fatalf("a move from a position that is not stored: %v, want ErrPositionMoved", err)
	}
	if got := value(t, reg, "cdnapi_store_errors_total", "engine", "sqlite", "operation", "write", "kind", "rejected"); got != 1 {
		t.Errorf("errors_total{operation=write,kind=rejected} = %v, want 1", got)
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

// TestEngineTimeouts checks that the time limits of a store call count as
// timeouts: a write lock held past the caller's deadline on SQLite (a
// writer waits for another's lock as long as its context allows, past
// busy_timeout), and a table lock held past PostgreSQL's
// statement_timeout.
func TestEngineTimeouts(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		engine string
		// open returns a migrated store with a short time limit, after
		// making another connection hold the lock that the call waits for.
		open func(t *testing.T) cdnapi.Engine
		call func(st cdnapi.Engine) error
		op   string
	}{
		{"sqlite", func(t *testing.T) cdnapi.Engine {
			path := filepath.Join(t.TempDir(), "busy.db")
			st, err := sqlite.Open(ctx, path, sqlite.Options{BusyTimeout: 20 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			if err := st.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			holder, err := sql.Open("sqlite", path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { holder.Close() })
			conn, err := holder.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { conn.Close() })
			if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil { // the write lock
				t.Fatal(err)
			}
			return st
		}, func(st cdnapi.Engine) error {
			ctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			defer cancel()
			return st.SetComponentOverride(ctx, cdnapi.ComponentOverride{Name: cdnapi.ComponentUpload, Status: cdnapi.StatusUnderMaintenance})
		}, "set_component_override"},
		{"postgres", func(t *testing.T) cdnapi.Engine {
			dsn := pgtest.NewSchema(t)
			st, err := postgres.Open(ctx, dsn, postgres.Options{StatementTimeout: 50 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			if err := st.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			conn, err := pgx.Connect(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { conn.Close(ctx) })
			tx, err := conn.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(ctx, "LOCK TABLE regions IN ACCESS EXCLUSIVE MODE"); err != nil {
				t.Fatal(err)
			}
			return st
		}, func(st cdnapi.Engine) error {
			_, err := st.ListRegions(ctx)
			return err
		}, "list_regions"},
	}
	for _, tt := range tests {
		t.Run(tt.engine, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			st := storemetrics.Wrap(tt.open(t), storemetrics.NewMetrics(reg))
			err := tt.call(st)
			if err == nil {
				t.Fatal("the call did not wait past its limit")
			}
			if got := value(t, reg, "cdnapi_store_errors_total", "engine", tt.engine, "operation", tt.op, "kind", "timeout"); got != 1 {
				t.Errorf("errors_total{kind=timeout} = %v, want 1 (the error: %v)", got, err)
			}
		})
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
		{"measured", storemetrics.Wrap(inner, storemetrics.NewMetrics(prometheus.NewRegistry()))},
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

// Measure needs nothing of an engine but cdnapi.Engine: its name labels the
// series, its pools are collected, and the measured engine answers both as
// the engine does.
func TestMeasureEngine(t *testing.T) {
	for _, tt := range []struct {
		name  string
		open  func(t *testing.T) cdnapi.Engine
		pools []string
		wal   bool // the engine reports a WAL of its own
	}{
		{"sqlite", func(t *testing.T) cdnapi.Engine { return teststore.SQLite(t) }, []string{"read", "write"}, true},
		{"postgres", func(t *testing.T) cdnapi.Engine { return teststore.Postgres(t) }, []string{"primary"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			st := storemetrics.Measure(tt.open(t), reg)
			if st.Name() != tt.name {
				t.Errorf("Name() = %q, want %q", st.Name(), tt.name)
			}
			var pools []string
			for _, p := range st.PoolStats() {
				pools = append(pools, p.Pool)
				if p.Max <= 0 {
					t.Errorf("pool %s: Max %d", p.Pool, p.Max)
				}
			}
			if fmt.Sprint(pools) != fmt.Sprint(tt.pools) {
				t.Errorf("pools %v, want %v", pools, tt.pools)
			}
			if err := st.Ping(t.Context()); err != nil {
				t.Fatal(err)
			}
			families, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			var series []string
			for _, f := range families {
				if f.GetName() != "cdnapi_store_pool_max_connections" {
					continue
				}
				for _, m := range f.GetMetric() {
					labels := map[string]string{}
					for _, l := range m.GetLabel() {
						labels[l.GetName()] = l.GetValue()
					}
					series = append(series, labels["engine"]+"/"+labels["pool"])
				}
			}
			var want []string
			for _, p := range tt.pools {
				want = append(want, tt.name+"/"+p)
			}
			if fmt.Sprint(series) != fmt.Sprint(want) {
				t.Errorf("pool series %v, want %v", series, want)
			}
			if n := testutil.CollectAndCount(reg, "cdnapi_store_call_duration_seconds"); n == 0 {
				t.Error("no call series under the engine's name")
			}
			// SQLite's WAL and the size over which the store checkpoints
			// it (16 MiB); PostgreSQL's WAL is the server's, not reported.
			walSeries := 0
			for _, f := range families {
				switch f.GetName() {
				case "cdnapi_store_wal_bytes":
					walSeries++
				case "cdnapi_store_wal_limit_bytes":
					walSeries++
					if got := f.GetMetric()[0].GetGauge().GetValue(); got != 16<<20 {
						t.Errorf("cdnapi_store_wal_limit_bytes = %v, want 16 MiB", got)
					}
				}
			}
			if want := map[bool]int{true: 2, false: 0}[tt.wal]; walSeries != want {
				t.Errorf("%d WAL series, want %d", walSeries, want)
			}
		})
	}
}
