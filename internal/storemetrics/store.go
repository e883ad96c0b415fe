package storemetrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cdnapi/cdnapi"
)

// measured is a cdnapi.Engine whose calls are recorded in Metrics. Each method
// calls the store's and records its time and error; the calls of a Write's
// transaction, a MoveLogPosition among them, are measured as the one write.
type measured struct {
	inner  cdnapi.Engine
	m      *Metrics
	engine string
	calls  [numOps]prometheus.Observer // the latency series of each op, resolved once
}

// op is an operation of cdnapi.Engine, an index into opNames and measured.calls.
type op int

const (
	opListFiles op = iota
	opListAssets
	opListRegions
	opRegion
	opWrite
	opDeleteAssetsBefore
	opSetRegionStatus
	opCursorSecret
	opComponentOverrides
	opSetComponentOverride
	opClearOverride
	opPing
	opClose
	opMigrate
	opCreateKey
	opAPIKeys
	opRevokeKey
	opTouchKeys
	opRecordStatusChange
	opStatusChanges
	opUpdateIncident
	opListIncidents
	opIncidentsSince
	opDeleteHistoryBefore
	opLogPosition
	opLogPositions
	opDeleteLogPosition
	opFileStamps
	opMakeAssetPartitions
	opDropAssetPartitions
	opCountAssetsSince
	numOps
)

// opNames are the operation label values.
var opNames = [numOps]string{
	"list_files", "list_assets", "list_regions", "region",
	"write",
	"delete_assets_before", "set_region_status", "cursor_secret",
	"component_overrides", "set_component_override", "clear_component_override",
	"ping", "close", "migrate",
	"create_key", "api_keys", "revoke_key", "touch_keys",
	"record_status_change", "status_changes", "update_incident",
	"list_incidents", "incidents_since", "delete_history_before",
	"log_position", "log_positions", "delete_log_position",
	"file_stamps",
	"make_asset_partitions", "drop_asset_partitions", "count_assets_since",
}

// Measure returns st with every call recorded in reg, and registers there
// the collectors of its connection pools and, for an engine with a WAL of
// its own (SQLite), of that WAL: what serve does with its store.
func Measure(st cdnapi.Engine, reg prometheus.Registerer) cdnapi.Engine {
	reg.MustRegister(NewPoolCollector(st.Name(), st.PoolStats))
	if w, ok := st.(WALReporter); ok {
		reg.MustRegister(newWALCollector(st.Name(), w.WAL))
	}
	return Wrap(st, NewMetrics(reg))
}

// Wrap returns st with every call recorded in m under the engine's name
// (st.Name(): "sqlite", "postgres"). The latency series of every operation
// exist from the start, at zero.
func Wrap(st cdnapi.Engine, m *Metrics) cdnapi.Engine {
	engine := st.Name()
	s := &measured{inner: st, m: m, engine: engine}
	for o, name := range opNames {
		s.calls[o] = m.calls.WithLabelValues(engine, name)
		// The error counters exist from the start too, at 0, so that an
		// alert on their rate needs no `or vector(0)`.
		for _, kind := range errorKinds {
			m.errors.WithLabelValues(engine, name, kind)
		}
	}
	if p, ok := st.(cdnapi.AssetPartitioner); ok {
		return &measuredPartitions{s, p}
	}
	return s
}

// measuredPartitions is a measured engine that keeps its assets in
// partitions: the wrapper has the methods only when the engine has them,
// so that retention, which asks, finds what the engine does.
type measuredPartitions struct {
	*measured
	parts cdnapi.AssetPartitioner
}

func (s *measured) CountAssetsSince(ctx context.Context, since time.Time, limit int) (int, time.Time, error) {
	start := time.Now()
	n, oldest, err := s.inner.CountAssetsSince(ctx, since, limit)
	s.done(opCountAssetsSince, start, err)
	return n, oldest, err
}

func (s *measuredPartitions) MakeAssetPartitions(ctx context.Context, from, to time.Time) (int, error) {
	return measure(s.measured, opMakeAssetPartitions, func() (int, error) { return s.parts.MakeAssetPartitions(ctx, from, to) })
}

func (s *measuredPartitions) DropAssetPartitionsBefore(ctx context.Context, cutoff time.Time) (int, int64, error) {
	start := time.Now()
	n, rows, err := s.parts.DropAssetPartitionsBefore(ctx, cutoff)
	s.done(opDropAssetPartitions, start, err)
	s.m.deleted.WithLabelValues(s.engine, "assets").Add(float64(rows))
	return n, rows, err
}

func (s *measured) done(o op, start time.Time, err error) {
	s.calls[o].Observe(time.Since(start).Seconds())
	if kind := ErrorKind(err); kind != "" {
		s.m.errors.WithLabelValues(s.engine, opNames[o], kind).Inc()
	}
}

func (s *measured) ListFiles(ctx context.Context, q cdnapi.FileQuery) ([]cdnapi.File, error) {
	return measure(s, opListFiles, func() ([]cdnapi.File, error) { return s.inner.ListFiles(ctx, q) })
}

func (s *measured) ListAssets(ctx context.Context, q cdnapi.AssetQuery) ([]cdnapi.Asset, error) {
	return measure(s, opListAssets, func() ([]cdnapi.Asset, error) { return s.inner.ListAssets(ctx, q) })
}

func (s *measured) ListRegions(ctx context.Context) ([]cdnapi.Region, error) {
	return measure(s, opListRegions, func() ([]cdnapi.Region, error) { return s.inner.ListRegions(ctx) })
}

func (s *measured) Region(ctx context.Context, code string) (cdnapi.Region, error) {
	return measure(s, opRegion, func() (cdnapi.Region, error) { return s.inner.Region(ctx, code) })
}

func (s *measured) Write(ctx context.Context, fn func(w cdnapi.Writer) error) error {
	return s.run(opWrite, func() error { return s.inner.Write(ctx, fn) })
}

func (s *measured) DeleteAssetsBefore(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	n, err := measure(s, opDeleteAssetsBefore, func() (int, error) { return s.inner.DeleteAssetsBefore(ctx, cutoff, limit) })
	s.m.deleted.WithLabelValues(s.engine, "assets").Add(float64(n))
	return n, err
}

func (s *measured) SetRegionStatus(ctx context.Context, code string, status cdnapi.Status, until time.Time) error {
	return s.run(opSetRegionStatus, func() error { return s.inner.SetRegionStatus(ctx, code, status, until) })
}

func (s *measured) CursorSecret(ctx context.Context) ([]byte, error) {
	return measure(s, opCursorSecret, func() ([]byte, error) { return s.inner.CursorSecret(ctx) })
}

func (s *measured) ComponentOverrides(ctx context.Context) ([]cdnapi.ComponentOverride, error) {
	return measure(s, opComponentOverrides, func() ([]cdnapi.ComponentOverride, error) { return s.inner.ComponentOverrides(ctx) })
}

func (s *measured) SetComponentOverride(ctx context.Context, o cdnapi.ComponentOverride) error {
	return s.run(opSetComponentOverride, func() error { return s.inner.SetComponentOverride(ctx, o) })
}

func (s *measured) ClearComponentOverride(ctx context.Context, name string) error {
	return s.run(opClearOverride, func() error { return s.inner.ClearComponentOverride(ctx, name) })
}

func (s *measured) Ping(ctx context.Context) error {
	return s.run(opPing, func() error { return s.inner.Ping(ctx) })
}

func (s *measured) Close() error {
	return s.run(opClose, s.inner.Close)
}

func (s *measured) Migrate(ctx context.Context) error {
	return s.run(opMigrate, func() error { return s.inner.Migrate(ctx) })
}

func (s *measured) ApplyMigrations(ctx context.Context) (cdnapi.Migrations, error) {
	return measure(s, opMigrate, func() (cdnapi.Migrations, error) { return s.inner.ApplyMigrations(ctx) })
}

// Name and PoolStats are not measured: they read no database.
func (s *measured) Name() string { return s.inner.Name() }

func (s *measured) PoolStats() []cdnapi.PoolStats { return s.inner.PoolStats() }

// measure calls fn as the operation o and records it.
func measure[T any](s *measured, o op, fn func() (T, error)) (T, error) {
	start := time.Now()
	v, err := fn()
	s.done(o, start, err)
	return v, err
}

// run calls fn, which returns only an error, as the operation o.
func (s *measured) run(o op, fn func() error) error {
	start := time.Now()
	err := fn()
	s.done(o, start, err)
	return err
}
