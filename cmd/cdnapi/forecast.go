package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"syscall"
	"time"

	"github.com/cdnapi/cdnapi"
)

// bytesPerAsset is what an asset costs on disk, table and indexes, as
// scripts/bench-week measured it at ten million assets (docs/sizing.md).
var bytesPerAsset = map[string]int64{
	"sqlite":   161,
	"postgres": 428,
}

// forecastSample caps the assets the forecast counts: at 5,000 writes/s an
// hour is 18 million, and counting them all would hold up serve's start by
// seconds. When the last hour holds more, the rate is that of the newest
// forecastSample assets.
const forecastSample = 200_000

// retentionForecast is what serve's retention implies for the rate at which
// assets were written in the last hour.
type retentionForecast struct {
	engine    string
	retention time.Duration // 0: every asset is kept
	perHour   float64       // assets written per hour, measured
	rows      int64         // assets held at retention, at that rate
	bytes     int64         // their size on disk
	free      int64         // free bytes on the database's disk; -1 when not known
	used      int64         // bytes the database's files hold now
}

// forecastRetention measures the write rate of the last hour before now in
// st and projects it over retention. dbPath is the SQLite file, whose disk
// it checks; "" for PostgreSQL, whose disk is the server's.
func forecastRetention(ctx context.Context, st cdnapi.AssetCounter, engine, dbPath string, retention time.Duration, now time.Time) (retentionForecast, error) {
	f := retentionForecast{engine: engine, retention: retention, free: -1}
	n, oldest, err := st.CountAssetsSince(ctx, now.Add(-time.Hour), forecastSample)
	if err != nil {
		return f, err
	}
	span := time.Hour
	if n >= forecastSample {
		span = max(now.Sub(oldest), time.Second)
	}
	f.perHour = float64(n) * float64(time.Hour) / float64(span)
	if retention > 0 {
		f.rows = int64(f.perHour * retention.Hours())
		f.bytes = f.rows * bytesPerAsset[engine]
	}
	if dbPath != "" {
		var fs syscall.Statfs_t
		if err := syscall.Statfs(filepath.Dir(dbPath), &fs); err == nil {
			f.free = int64(fs.Bavail) * int64(fs.Bsize)
		}
		f.used = filesSize(dbPath, dbPath+"-wal")
	}
	return f, nil
}

// short reports whether the disk's free space, with what the database
// holds now, would not hold the assets of the retention: a forecast on a
// disk it knows, with a retention.
func (f retentionForecast) short() bool {
	return f.free >= 0 && f.retention > 0 && f.bytes > f.free+f.used
}

// log says what the forecast found, and warns when the disk would not hold
// it.
func (f retentionForecast) log(logger *slog.Logger) {
	attrs := []any{"engine", f.engine, "assets_last_hour", int64(f.perHour)}
	if f.retention <= 0 {
		logger.Info("asset retention is off: every asset is kept, the store grows by the last hour's rate",
			append(attrs, "assets_per_day", int64(f.perHour*24), "bytes_per_day", int64(f.perHour*24)*bytesPerAsset[f.engine])...)
		return
	}
	attrs = append(attrs, "retention", f.retention.String(), "assets_at_retention", f.rows, "bytes_at_retention", f.bytes,
		"size_at_retention", humanBytes(f.bytes))
	if f.free >= 0 {
		attrs = append(attrs, "disk_free", humanBytes(f.free))
	} else {
		attrs = append(attrs, "disk_free", "not known: the database server's disk")
	}
	if f.short() {
		logger.Warn("the disk's free space would not hold the assets of the retention at the last hour's write rate: shorten --asset-retention or grow the disk", attrs...)
		return
	}
	logger.Info("asset retention at the last hour's write rate", attrs...)
}

// filesSize returns the bytes the files at paths hold; a missing one holds
// none.
func filesSize(paths ...string) int64 {
	var n int64
	for _, p := range paths {
		var st syscall.Stat_t
		if syscall.Stat(p, &st) == nil {
			n += st.Size
		}
	}
	return n
}

// humanBytes writes b in the largest binary unit that keeps it at least 1.
func humanBytes(b int64) string {
	const unit = 1024
	if b < unit {
		return fmt.Sprintf("%d B", b)
	}
	v, u := float64(b), 0
	for v >= unit && u < 5 {
		v /= unit
		u++
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGTPE"[u-1])
}
