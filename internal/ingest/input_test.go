package ingest

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestInput(t *testing.T) {
	const ndjson = "{\"code\":\"FRA1\"}\n{\"code\":\"IAD1\"}\n"
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(ndjson))
	zw.Close()
	var gzCSV bytes.Buffer
	zw = gzip.NewWriter(&gzCSV)
	zw.Write([]byte("id,path\n1,/a\n"))
	zw.Close()

	for _, tt := range []struct {
		name, in    string
		wantGzipped bool
		wantErr     string // "" for none; else in the error, which wraps ErrNotNDJSON
	}{
		{"ndjson", ndjson, false, ""},
		{"empty", "", false, ""},
		{"blank lines and a BOM first", "\ufeff\n\n" + ndjson, false, ""},
		{"a bad line is left to Run", "not json\n", false, ""},
		{"gzip", gz.String(), true, ""},
		{"csv", "id,created_at,path\n", false, `line 1 looks like CSV ("id,created_at,path")`},
		{"tsv", "id\tpath\n", false, "line 1 looks like CSV"},
		{"csv in gzip", gzCSV.String(), true, "line 1 looks like CSV"},
		{"array", "[\n{\"code\":\"FRA1\"}\n]", false, "jq -c '.[]' FILE | cdnapi ingest"},
		{"zstd", "\x28\xb5\x2f\xfd\x00", false, "this is zstd data; decompress it first, e.g. zstd -dc FILE"},
		{"bzip2", "BZh91AY", false, "bzip2 -dc"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, gzipped, err := Input(strings.NewReader(tt.in))
			if gzipped != tt.wantGzipped {
				t.Errorf("gzipped = %v, want %v", gzipped, tt.wantGzipped)
			}
			if tt.wantErr != "" {
				if err == nil || !errors.Is(err, ErrNotNDJSON) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want ErrNotNDJSON with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(r)
			if err != nil {
				t.Fatal(err)
			}
			want := tt.in
			if tt.wantGzipped {
				want = ndjson
			}
			if string(got) != want {
				t.Errorf("read %q, want %q: Input must not consume what it looks at", got, want)
			}
		})
	}
}
