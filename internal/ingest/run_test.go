package ingest

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/storetest"
)

// Every bad line, between two valid ones, makes an ingest write nothing,
// report exactly that line, and leave the whole store as it was.
func TestBadLinesLeaveStoreUnchanged(t *testing.T) {
	for _, e := range engines {
		t.Run(e.Name, func(t *testing.T) {
			t.Parallel()
			st := e.Open(t)
			mustRun(t, st, Regions, strings.Replace(goodRegion, "TST1", "FRA1", 1)+"\n")
			mustRun(t, st, Assets, strings.Replace(goodAsset, "Good1", "Old1", 1)+"\n")
			mustRun(t, st, Files, strings.Replace(goodFile, "Good1", "Old1", 1)+"\n")
			before := takeSnapshot(t, st)
			good := map[Kind]string{Files: goodFile, Assets: goodAsset, Regions: goodRegion}
			for _, tt := range badLines {
				t.Run(tt.name, func(t *testing.T) {
					input := good[tt.kind] + "\n" + tt.line + "\n" + strings.Replace(good[tt.kind], "1", "2", 1) + "\n"
					var reported []string
					res, err := Run(context.Background(), st, strings.NewReader(input), Options{
						Kind: tt.kind, Project: "default",
						OnInvalid: func(e *LineError) { reported = append(reported, e.Error()) },
					})
					if invalid, ok := errors.AsType[*InvalidError](err); !ok || invalid.Lines != 1 {
						t.Errorf("Run returned %v, want an *InvalidError of 1 line", err)
					}
					if want := "line 2: " + tt.want; len(reported) != 1 || reported[0] != want {
						t.Errorf("reported %q\nwant [%q]", reported, want)
					}
					if res.Lines != 3 || res.Invalid != 1 || res.Written != 0 {
						t.Errorf("result %+v, want 3 lines, 1 invalid, 0 written", res)
					}
					sameSnapshot(t, tt.name, before, takeSnapshot(t, st))
				})
			}
		})
	}
}

// A UTF-8 byte-order mark at the start of the input, as Windows editors
// write one, is skipped; one at the start of a later line is refused (see
// badLines).
func TestByteOrderMarkStartsTheInput(t *testing.T) {
	st := engines[0].Open(t)
	mustRun(t, st, Regions, "\ufeff"+strings.Replace(goodRegion, "TST1", "FRA1", 1)+"\r\n")
	res := mustRun(t, st, Assets, "\ufeff"+goodAsset+"\n")
	if res.Lines != 1 || res.Written != 1 || res.Invalid != 0 {
		t.Errorf("result %+v, want 1 line written", res)
	}
	if got := takeSnapshot(t, st); len(got.Regions) != 1 || got.Regions[0].Code != "FRA1" || len(got.Assets) != 1 || got.Assets[0].ID != "ast_Good1" {
		t.Errorf("stored %+v, want region FRA1 and asset ast_Good1", got)
	}
}

// Ingesting the same input twice leaves the store exactly as ingesting it
// once, on every engine. The assets span several batches, so that on
// PostgreSQL several COPY batches share the one transaction.
func TestIngestIsIdempotent(t *testing.T) {
	regions := storetest.Regions()
	files := append(storetest.Files(300, "default", 1), storetest.Files(200, "other", 2)...)
	assets := storetest.Assets(3*testBatch+17, storetest.RegionCodes(regions), 3)
	inputs := []struct {
		kind  Kind
		input string
		want  int64
	}{
		{Regions, ndjson(t, regions, regionShape), int64(len(regions))},
		// Files of the default project leave out "project"; the others carry it.
		{Files, ndjson(t, files[:300], fileShape(false)) + ndjson(t, files[300:], fileShape(true)), int64(len(files))},
		{Assets, ndjson(t, assets, assetShape), int64(len(assets))},
	}
	for _, e := range engines {
		t.Run(e.Name, func(t *testing.T) {
			t.Parallel()
			st := e.Open(t)
			var first snapshot
			for round := range 2 {
				for _, in := range inputs {
					if res := mustRun(t, st, in.kind, in.input); res.Written != in.want || res.Lines != in.want {
						t.Errorf("round %d, %s: %+v, want %d lines written", round, in.kind, res, in.want)
					}
				}
				snap := takeSnapshot(t, st)
				if round == 0 {
					first = snap
					continue
				}
				sameSnapshot(t, "second ingest", first, snap)
			}

			// And what is stored is exactly what was read.
			wantFiles := map[string][]cdnapi.File{"default": slices.Clone(files[:300]), "other": slices.Clone(files[300:])}
			for _, fs := range wantFiles {
				storetest.SortFiles(fs)
			}
			wantAssets := slices.Clone(assets)
			storetest.SortAssets(wantAssets)
			wantRegions := slices.Clone(regions)
			storetest.SortRegions(wantRegions)
			sameSnapshot(t, "ingested records", snapshot{Files: wantFiles, Assets: wantAssets, Regions: wantRegions}, first)
		})
	}
}

// With SkipInvalid, the valid lines are committed and the invalid ones go,
// byte for byte, to Rejects: also a line too long for the reader's buffer.
func TestSkipInvalidKeepsRejects(t *testing.T) {
	st := engines[0].Open(t)
	mustRun(t, st, Regions, strings.Replace(goodRegion, "TST1", "FRA1", 1)+"\n")
	huge := spoil(goodAsset, "/static/app.js", "/"+strings.Repeat("a", 3<<20))
	lines := []string{
		goodAsset,
		spoil(goodAsset, "HIT", "WARM"),
		huge,
		spoil(goodAsset, "Good1", "Good2") + "\r", // a CRLF line ending is fine
		"",
		spoil(goodAsset, "Good1", "Good3"), // the last line needs no newline
	}
	var rejects strings.Builder
	var reported []string
	res, err := Run(context.Background(), st, strings.NewReader(strings.Join(lines, "\n")), Options{
		Kind: Assets, SkipInvalid: true, Rejects: &rejects,
		OnInvalid: func(e *LineError) { reported = append(reported, e.Error()) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if res != (Result{Lines: 6, Invalid: 3, Written: 3}) {
		t.Errorf("result %+v, want 6 lines, 3 invalid, 3 written", res)
	}
	wantReported := []string{
		"line 2: cache_status: want " + wantCacheStatus,
		"line 3: longer than 65536 bytes; want one JSON object per line of at most 64 KiB",
		"line 5: empty line; want one JSON object per line",
	}
	if !slices.Equal(reported, wantReported) {
		t.Errorf("reported\n%q\nwant\n%q", reported, wantReported)
	}
	if want := lines[1] + "\n" + huge + "\n\n"; rejects.String() != want {
		t.Errorf("rejects hold %d bytes, want the %d of the three invalid lines", rejects.Len(), len(want))
	}
	var ids []string
	for _, a := range takeSnapshot(t, st).Assets {
		ids = append(ids, a.ID)
	}
	slices.Sort(ids)
	if want := []string{"ast_Good1", "ast_Good2", "ast_Good3"}; !slices.Equal(ids, want) {
		t.Errorf("stored %v, want %v", ids, want)
	}
}

// A canceled ingest writes nothing, whatever it had sent to the store.
func TestCanceledIngestWritesNothing(t *testing.T) {
	st := engines[0].Open(t)
	mustRun(t, st, Regions, ndjson(t, storetest.Regions(), regionShape))
	input := ndjson(t, storetest.Assets(5*testBatch, storetest.RegionCodes(storetest.Regions()), 1), assetShape)
	ctx, cancel := context.WithCancel(context.Background())
	r := &cancelingReader{r: strings.NewReader(input), after: int64(len(input) / 2), cancel: cancel}
	_, err := Run(ctx, st, r, Options{Kind: Assets, BatchSize: testBatch})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v, want context.Canceled", err)
	}
	if got := takeSnapshot(t, st).Assets; len(got) != 0 {
		t.Errorf("a canceled ingest left %d assets", len(got))
	}
}

// cancelingReader calls cancel once more than after bytes have been read
// through it.
type cancelingReader struct {
	r      io.Reader
	read   int64
	after  int64
	cancel func()
}

func (c *cancelingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p[:min(len(p), 64<<10)])
	if c.read += int64(n); c.read > c.after {
		c.cancel()
	}
	return n, err
}
