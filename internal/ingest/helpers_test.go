package ingest

import (
	"context"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/pgtest"
	"github.com/cdnapi/cdnapi/internal/teststore"
)

// The tests share one throwaway PostgreSQL cluster, a schema each.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// engines are the engines every ingest behaviour must hold on.
var engines = teststore.Engines

// testProjects are the projects whose files a snapshot holds: the tests
// write files into no others.
var testProjects = []string{"default", "other"}

// snapshot is the whole content of a store, as its lists show it.
type snapshot struct {
	Files   map[string][]cdnapi.File
	Assets  []cdnapi.Asset
	Regions []cdnapi.Region
}

// takeSnapshot reads everything in st through its list methods.
func takeSnapshot(t testing.TB, st cdnapi.Store) snapshot {
	t.Helper()
	ctx := context.Background()
	s := snapshot{Files: map[string][]cdnapi.File{}}
	for _, p := range testProjects {
		var after *cdnapi.Position
		for {
			page, err := st.ListFiles(ctx, cdnapi.FileQuery{Project: p, After: after, Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			s.Files[p] = append(s.Files[p], page...)
			if len(page) < 1000 {
				break
			}
			pos := page[len(page)-1].Position()
			after = &pos
		}
	}
	var after *cdnapi.Position
	for {
		page, err := st.ListAssets(ctx, cdnapi.AssetQuery{After: after, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		s.Assets = append(s.Assets, page...)
		if len(page) < 1000 {
			break
		}
		pos := page[len(page)-1].Position()
		after = &pos
	}
	regions, err := st.ListRegions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.Regions = regions
	return s
}

func (s snapshot) size() (files, assets, regions int) {
	for _, f := range s.Files {
		files += len(f)
	}
	return files, len(s.Assets), len(s.Regions)
}

// sameSnapshot fails t when the two snapshots differ.
func sameSnapshot(t testing.TB, what string, want, got snapshot) {
	t.Helper()
	if !reflect.DeepEqual(want, got) {
		wf, wa, wr := want.size()
		gf, ga, gr := got.size()
		t.Errorf("%s: store changed: files %d → %d, assets %d → %d, regions %d → %d (or their contents)",
			what, wf, gf, wa, ga, wr, gr)
	}
}

// The NDJSON shapes of the records, as the API outputs them.
type (
	fileLine struct {
		ID        string `json:"id"`
		CreatedAt string `json:"created_at"`
		Filename  string `json:"filename"`
		Bytes     int64  `json:"bytes"`
		Checksum  string `json:"checksum"`
		Project   string `json:"project,omitempty"`
	}
	assetLine struct {
		ID          string `json:"id"`
		CreatedAt   string `json:"created_at"`
		Path        string `json:"path"`
		Bytes       int64  `json:"bytes"`
		CacheStatus string `json:"cache_status"`
		Region      string `json:"region"`
	}
	regionLine struct {
		Code    string `json:"code"`
		Name    string `json:"name"`
		Zone    string `json:"zone"`
		Country string `json:"country"`
		Status  string `json:"status"`
	}
)

// ndjson returns records as NDJSON lines, each through shape.
func ndjson[T any](t testing.TB, records []T, shape func(T) any) string {
	t.Helper()
	var b strings.Builder
	for _, r := range records {
		line, err := json.Marshal(shape(r))
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.String()
}

func fileShape(withProject bool) func(cdnapi.File) any {
	return func(f cdnapi.File) any {
		l := fileLine{ID: f.ID, CreatedAt: cdnapi.Timestamp(f.CreatedAt), Filename: f.Filename, Bytes: f.Bytes, Checksum: f.Checksum}
		if withProject {
			l.Project = f.Project
		}
		return l
	}
}

func assetShape(a cdnapi.Asset) any {
	return assetLine{ID: a.ID, CreatedAt: cdnapi.Timestamp(a.CreatedAt), Path: a.Path, Bytes: a.Bytes,
		CacheStatus: string(a.CacheStatus), Region: a.Region}
}

func regionShape(r cdnapi.Region) any {
	return regionLine{Code: r.Code, Name: r.Name, Zone: r.Zone, Country: r.Country, Status: string(r.Status)}
}

// testBatch is the batch size of the tests' ingests: small, so that a few
// thousand lines make several batches.
const testBatch = 1000

// mustRun runs an ingest that must succeed, in batches of testBatch.
func mustRun(t testing.TB, st cdnapi.Store, kind Kind, input string) Result {
	t.Helper()
	res, err := Run(context.Background(), st, strings.NewReader(input), Options{Kind: kind, Project: "default", BatchSize: testBatch})
	if err != nil {
		t.Fatalf("ingest %s: %v", kind, err)
	}
	return res
}
