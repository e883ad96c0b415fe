package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/demo"
	"github.com/cdnapi/cdnapi/internal/ingest"
)

// runCmd runs the program in-process with args and the given stdin, and
// returns what it printed. Its deadline only stops a hang: the crash test
// ingests 300,000 assets twice under the race detector, which took over
// two minutes on a loaded 2-core machine.
func runCmd(t testing.TB, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	err = run(ctx, args, getenvFrom(nil), strings.NewReader(stdin), &out, &errOut)
	return out.String(), errOut.String(), err
}

// mustRunCmd is runCmd for a command that must succeed.
func mustRunCmd(t testing.TB, stdin string, args ...string) (stdout, stderr string) {
	t.Helper()
	stdout, stderr, err := runCmd(t, stdin, args...)
	if err != nil {
		t.Fatalf("cdnapi %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return stdout, stderr
}

// ndjsonLines returns records as NDJSON in the API's field names, each
// record given as a map.
func ndjsonLines(t testing.TB, records []map[string]any) string {
	t.Helper()
	var b strings.Builder
	for _, r := range records {
		line, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.String()
}

func regionRecord(r cdnapi.Region) map[string]any {
	return map[string]any{"code": r.Code, "name": r.Name, "zone": r.Zone, "country": r.Country, "status": r.Status}
}

func assetRecord(a cdnapi.Asset) map[string]any {
	return map[string]any{"id": a.ID, "created_at": cdnapi.Timestamp(a.CreatedAt), "path": a.Path,
		"bytes": a.Bytes, "cache_status": a.CacheStatus, "region": a.Region}
}

// demoRegionsNDJSON is the demo regions as NDJSON.
func demoRegionsNDJSON(t testing.TB) string {
	var recs []map[string]any
	for _, r := range demo.Regions() {
		recs = append(recs, regionRecord(r))
	}
	return ndjsonLines(t, recs)
}

// writeAssetFile writes n demo assets, requested over the three days before
// now, as NDJSON to a file and returns its path and their IDs.
func writeAssetFile(t *testing.T, n int, now time.Time) (string, []string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "assets.ndjson")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	ids := make([]string, 0, n)
	for a := range demo.NewGenerator(3, now).Assets(n) {
		if err := enc.Encode(assetRecord(a)); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, a.ID)
	}
	if err := errors.Join(w.Flush(), f.Close()); err != nil {
		t.Fatal(err)
	}
	return path, ids
}

// migratedDB returns the DSN of a new SQLite database in a directory of t's,
// made by cdnapi migrate: the commands but serve, seed and migrate refuse a
// database that does not exist.
func migratedDB(t testing.TB, name string) string {
	t.Helper()
	db := "sqlite:" + filepath.Join(t.TempDir(), name)
	mustRunCmd(t, "", "migrate", "--db", db)
	return db
}

// openTestStore opens the store at dsn as the commands do, and closes it
// when t ends.
func openTestStore(t testing.TB, dsn string) store {
	t.Helper()
	st, err := storeFlags{dsn: &dsn}.createMigrated(t.Context(), func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// storedAssetIDs returns the IDs of every asset in the store at dsn, sorted.
func storedAssetIDs(t testing.TB, dsn string) []string {
	t.Helper()
	st := openTestStore(t, dsn)
	var ids []string
	var after *cdnapi.Position
	for {
		page, err := st.ListAssets(t.Context(), cdnapi.AssetQuery{After: after, Limit: 5000})
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range page {
			ids = append(ids, a.ID)
		}
		if len(page) < 5000 {
			break
		}
		after = &cdnapi.Position{CreatedAt: page[len(page)-1].CreatedAt, ID: page[len(page)-1].ID}
	}
	slices.Sort(ids)
	return ids
}

func TestIngestCommand(t *testing.T) {
	db := migratedDB(t, "ingest.db")
	_, stderr := mustRunCmd(t, demoRegionsNDJSON(t), "ingest", "regions", "--db", db)
	if want := fmt.Sprintf("ingested %d regions in ", len(demo.Regions())); !strings.HasPrefix(stderr, want) ||
		!strings.HasSuffix(stderr, " lines/s); 0 invalid\n") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("regions ingest printed %q, want one summary line", stderr)
	}

	now := time.Now().UTC().Truncate(time.Second)
	path, ids := writeAssetFile(t, 1000, now)
	slices.Sort(ids)
	mustRunCmd(t, "", "ingest", "assets", path, "--db", db)
	if got := storedAssetIDs(t, db); !slices.Equal(got, ids) {
		t.Fatalf("stored %d assets, want the %d of the file", len(got), len(ids))
	}

	good := fmt.Sprintf(`{"id":"ast_New%%d","created_at":%q,"path":"/x.js","bytes":1,"cache_status":"HIT","region":"FRA1"}`,
		cdnapi.Timestamp(now))
	var input strings.Builder
	for i := range 30 {
		fmt.Fprintf(&input, good+"\n", i)
		if i%2 == 1 { // 15 invalid lines: lines 3, 6, 9, …, 45
			fmt.Fprintf(&input, strings.Replace(good, `"HIT"`, `"WARM"`, 1)+"\n", 100+i)
		}
	}

	t.Run("an invalid line writes nothing", func(t *testing.T) {
		metrics := filepath.Join(t.TempDir(), "ingest.prom")
		_, stderr, err := runCmd(t, input.String(), "ingest", "assets", "-", "--db", db, "--metrics-file", metrics)
		wantMetricsFile(t, metrics, `cdnapi_ingest_rows{kind="assets",result="accepted"} 0`,
			`cdnapi_ingest_rows{kind="assets",result="rejected"} 15`, `cdnapi_ingest_last_run_success{kind="assets"} 0`)
		if err == nil || err.Error() != "ingest: 15 invalid lines; nothing was written (fix the lines, or pass --skip-invalid to write the valid ones)" {
			t.Errorf("err = %v", err)
		}
		lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
		if len(lines) != 16 || lines[0] != `line 3: cache_status: want one of HIT, MISS, EXPIRED, STALE, UPDATING, REVALIDATED, BYPASS or DYNAMIC` ||
			!strings.HasPrefix(lines[14], "line 45: ") ||
			!strings.HasSuffix(lines[15], "; 15 invalid; nothing was written") {
			t.Errorf("stderr:\n%s", stderr)
		}
		if got := storedAssetIDs(t, db); !slices.Equal(got, ids) {
			t.Errorf("the store changed: %d assets, want %d", len(got), len(ids))
		}
	})

	t.Run("more invalid lines than are shown", func(t *testing.T) {
		bad := strings.Repeat(`{"id":1}`+"\n", maxShownErrors+5)
		_, stderr, err := runCmd(t, bad, "ingest", "assets", "--db", db)
		if err == nil || !strings.Contains(stderr, "\n… and 5 more invalid lines\n") ||
			strings.Count(stderr, "line ") != maxShownErrors {
			t.Errorf("err %v, stderr:\n%s", err, stderr)
		}
	})

	t.Run("skip invalid lines", func(t *testing.T) {
		rejects := filepath.Join(t.TempDir(), "rejects.ndjson")
		metrics := filepath.Join(t.TempDir(), "ingest.prom")
		_, stderr := mustRunCmd(t, input.String(), "ingest", "assets", "--skip-invalid", "--rejects", rejects, "--db", db, "--metrics-file", metrics)
		wantMetricsFile(t, metrics, `cdnapi_ingest_rows{kind="assets",result="accepted"} 30`,
			`cdnapi_ingest_rows{kind="assets",result="rejected"} 15`, `cdnapi_ingest_last_run_success{kind="assets"} 1`)
		if !strings.Contains(stderr, "ingested 30 assets in ") || !strings.HasSuffix(stderr, "; 15 invalid, written to "+rejects+"\n") {
			t.Errorf("stderr:\n%s", stderr)
		}
		got, err := os.ReadFile(rejects)
		if err != nil {
			t.Fatal(err)
		}
		var want strings.Builder
		for _, line := range strings.SplitAfter(input.String(), "\n") {
			if strings.Contains(line, "WARM") {
				want.WriteString(line)
			}
		}
		if string(got) != want.String() {
			t.Errorf("rejects file:\n%s\nwant the 15 original invalid lines", got)
		}
		if n := len(storedAssetIDs(t, db)); n != len(ids)+30 {
			t.Errorf("stored %d assets, want %d", n, len(ids)+30)
		}
	})

	t.Run("files take --project", func(t *testing.T) {
		file := `{"id":"fil_A1","created_at":"2026-11-20T14:03:07Z","filename":"a.pdf","bytes":3,"checksum":"sha256:` +
			strings.Repeat("ab", 32) + `"}` + "\n"
		mustRunCmd(t, file, "ingest", "files", "--project", "acme", "--db", db)
		files, err := openTestStore(t, db).ListFiles(t.Context(), cdnapi.FileQuery{Project: "acme", Limit: 10})
		if err != nil || len(files) != 1 || files[0].ID != "fil_A1" {
			t.Errorf("files of acme: %v, %v", files, err)
		}
	})
}

func TestIngestCommandRefusesBadArguments(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "x.db")
	tests := []struct {
		name  string
		args  []string
		usage bool
		want  string
	}{
		{"no kind", []string{"ingest"}, true, "want files, assets or regions"},
		{"unknown kind", []string{"ingest", "requests"}, true, "want files, assets or regions"},
		{"two files", []string{"ingest", "assets", "a", "b"}, true, "want files, assets or regions"},
		{"rejects without skip", []string{"ingest", "assets", "--rejects", "r.ndjson"}, true, "--rejects goes with --skip-invalid"},
		{"bad project", []string{"ingest", "files", "--project", "a b"}, true, "--project must be"},
		{"missing file", []string{"ingest", "assets", "--db", db, filepath.Join(t.TempDir(), "none.ndjson")}, false, "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := runCmd(t, "", tt.args...)
			if err == nil || errors.Is(err, errUsage) != tt.usage || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v (usage %v), want one containing %q (usage %v)", err, errors.Is(err, errUsage), tt.want, tt.usage)
			}
		})
	}
}

func TestGrouped(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 243902: "243,902", 1234567: "1,234,567", -1234: "-1,234"} {
		if got := grouped(n); got != want {
			t.Errorf("grouped(%d) = %q, want %q", n, got, want)
		}
	}
}

// The live progress line shows lines, rate, share and ETA, and says when
// all is read and the ingest is committing.
func TestProgressLine(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "progress.db")
	input := demoRegionsNDJSON(t)
	var p ingest.Progress
	if _, err := ingest.Run(t.Context(), openTestStore(t, db), strings.NewReader(input),
		ingest.Options{Kind: ingest.Regions, Progress: &p}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	start := time.Now()
	pl := &progressLine{w: &out, p: &p, size: int64(len(input)), start: start}
	pl.draw(start.Add(2 * time.Second))
	if want := "\r\033[K24 lines  12 lines/s  100%  committing"; out.String() != want {
		t.Errorf("drew %q, want %q", out.String(), want)
	}
	out.Reset()
	pl.size *= 4 // as if a quarter had been read in the two seconds
	pl.draw(start.Add(2 * time.Second))
	if want := "\r\033[K24 lines  12 lines/s   25%  ETA 6s"; out.String() != want {
		t.Errorf("drew %q, want %q", out.String(), want)
	}
	out.Reset()
	pl.println("line 7: oops")
	if want := "\r\033[Kline 7: oops\n"; out.String() != want {
		t.Errorf("println wrote %q, want %q (the live line cleared first)", out.String(), want)
	}
}

// wantMetricsFile fails t unless the metrics file at path has each line.
func wantMetricsFile(t *testing.T, path string, lines ...string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range lines {
		if !strings.Contains("\n"+string(b), "\n"+line+"\n") {
			t.Errorf("%s lacks %q:\n%s", path, line, b)
		}
	}
}
