package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/sqlite"
	"github.com/cdnapi/cdnapi/internal/storetest"
)

// hourOfAssets returns a SQLite database holding perSecond assets for each
// second of an hour, and an older day of assets that the forecast must not
// count. The hour ends ten minutes from now, so that all of it is still in
// the last hour when serve counts it, however long a loaded machine takes
// to start serve: the forecast counts the assets at or after an hour ago.
func hourOfAssets(t *testing.T, perSecond int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cdnapi.db")
	ctx := t.Context()
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Second).Add(10 * time.Minute)
	var assets []cdnapi.Asset
	for s := 1; s <= 3600; s++ {
		for i := range perSecond {
			assets = append(assets, cdnapi.Asset{ID: fmt.Sprintf("ast_h%05dx%d", s, i), CreatedAt: now.Add(-time.Duration(s) * time.Second),
				Path: "/a.js", Bytes: 1, CacheStatus: cdnapi.CacheHit, Region: "FRA1"})
		}
	}
	for s := range 1000 { // a day ago: not of the last hour
		assets = append(assets, cdnapi.Asset{ID: fmt.Sprintf("ast_old%05d", s), CreatedAt: now.Add(-24*time.Hour - time.Duration(s)*time.Second),
			Path: "/a.js", Bytes: 1, CacheStatus: cdnapi.CacheHit, Region: "FRA1"})
	}
	if err := storetest.Writer(st).PutAssets(ctx, assets); err != nil {
		t.Fatal(err)
	}
	return path
}

// serveStartLog runs the real serve on db with args until it listens, and
// returns its log lines up to then, decoded.
func serveStartLog(t *testing.T, db string, args ...string) []map[string]any {
	t.Helper()
	args = append([]string{"serve", "--db", db, "--api-addr", "127.0.0.1:0", "--edge-addr", "127.0.0.1:0",
		"--admin-addr", "127.0.0.1:0"}, args...)
	ctx, cancel := context.WithCancel(t.Context())
	logs, logw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(ctx, args, getenvFrom(nil), strings.NewReader(""), io.Discard, logw)
		logw.Close()
		done <- err
	}()
	var lines []map[string]any
	listening := 0
	scanner := bufio.NewScanner(logs)
	for listening < 3 && scanner.Scan() {
		var line map[string]any
		if json.Unmarshal(scanner.Bytes(), &line) == nil {
			lines = append(lines, line)
			if line["msg"] == "listening" {
				listening++
			}
		}
	}
	cancel()
	go io.Copy(io.Discard, logs)
	if err := <-done; err != nil || listening < 3 {
		t.Fatalf("serve: %v, %d listeners up; log %v", err, listening, lines)
	}
	return lines
}

// retentionLine returns the line of the forecast.
func retentionLine(t *testing.T, lines []map[string]any) map[string]any {
	t.Helper()
	for _, l := range lines {
		if msg, _ := l["msg"].(string); strings.Contains(msg, "retention") {
			return l
		}
	}
	t.Fatalf("no line about the retention in %v", lines)
	return nil
}

// Serve says at start what its retention holds at the last hour's write
// rate, counted in the store: 2 assets a second for an hour, kept 24 hours,
// are 172,800 assets, on a disk that holds them.
func TestServeForecastsRetention(t *testing.T) {
	db := hourOfAssets(t, 2)
	line := retentionLine(t, serveStartLog(t, db, "--asset-retention", "24h"))
	if line["level"] != "INFO" || line["msg"] != "asset retention at the last hour's write rate" {
		t.Errorf("forecast line %v, want the INFO one", line)
	}
	perHour, _ := line["assets_last_hour"].(float64)
	rows, _ := line["assets_at_retention"].(float64)
	if perHour != 7200 || rows != 24*7200 {
		t.Errorf("assets_last_hour %v, assets_at_retention %v; want 7,200 and 172,800", perHour, rows)
	}
	if want := rows * float64(bytesPerAsset["sqlite"]); line["bytes_at_retention"] != want {
		t.Errorf("bytes_at_retention %v, want %v", line["bytes_at_retention"], want)
	}
	if free, _ := line["disk_free"].(string); !strings.HasSuffix(free, "iB") {
		t.Errorf("disk_free %q, want the free space of the database's disk", free)
	}
}

// A retention that the database's disk cannot hold at the last hour's rate
// is a warning at start; serve starts all the same. A century of the same
// hour is about 100 TiB, more than any disk that runs these tests.
func TestServeWarnsDiskShort(t *testing.T) {
	db := hourOfAssets(t, 2)
	line := retentionLine(t, serveStartLog(t, db, "--asset-retention", "876000h"))
	if line["level"] != "WARN" || !strings.Contains(line["msg"].(string), "would not hold") {
		t.Errorf("forecast line %v, want a WARN that the disk would not hold it", line)
	}
}

// With retention off there is nothing to hold: serve says how fast the
// store grows instead, and warns of nothing.
func TestServeForecastRetentionOff(t *testing.T) {
	db := hourOfAssets(t, 1)
	line := retentionLine(t, serveStartLog(t, db, "--asset-retention", "0"))
	if line["level"] != "INFO" || line["assets_per_day"] == nil {
		t.Errorf("forecast line %v, want the INFO of growth per day", line)
	}
}
