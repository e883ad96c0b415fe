package txwriter_test

import (
	"os"
	"strings"
	"testing"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/pgtest"
	"github.com/cdnapi/cdnapi/internal/storetest"
	"github.com/cdnapi/cdnapi/internal/teststore"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// The Writer of Run, as each engine's Write hands it out: empty batches
// succeed and write nothing, a failing batch is named with its engine and
// size, and the Writer refuses calls once fn has returned.
func TestRun(t *testing.T) {
	for _, e := range teststore.Engines {
		t.Run(e.Name, func(t *testing.T) {
			s := e.Open(t)
			ctx := t.Context()
			var kept cdnapi.Writer
			for _, tc := range []struct {
				name    string
				fn      func(w cdnapi.Writer) error
				wantErr string // a prefix of Write's error; "" for none
			}{
				{"empty batches", func(w cdnapi.Writer) error {
					kept = w
					if err := w.PutFiles(ctx, nil); err != nil {
						return err
					}
					if err := w.PutAssets(ctx, []cdnapi.Asset{}); err != nil {
						return err
					}
					return w.PutRegions(ctx, nil)
				}, ""},
				{"a failing batch", func(w cdnapi.Writer) error {
					bad := storetest.Assets(3, []string{"FRA1"}, 1)
					bad[2].CacheStatus = "WARM" // the schema refuses it
					return w.PutAssets(ctx, bad)
				}, e.Name + ": put 3 assets: "},
				{"a Writer of an ended Write", func(cdnapi.Writer) error {
					return kept.PutFiles(ctx, storetest.Files(2, "default", 2))
				}, e.Name + ": put 2 files: the Writer of a Write was used after fn returned"},
			} {
				err := s.Write(ctx, tc.fn)
				switch {
				case tc.wantErr == "" && err != nil:
					t.Errorf("%s: Write = %v, want nil", tc.name, err)
				case tc.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.wantErr)):
					t.Errorf("%s: Write = %v, want an error that starts %q", tc.name, err, tc.wantErr)
				}
			}
			files, err := s.ListFiles(ctx, cdnapi.FileQuery{Project: "default", Limit: 10})
			if err != nil || len(files) != 0 {
				t.Errorf("ListFiles = %d files, %v; want none", len(files), err)
			}
			assets, err := s.ListAssets(ctx, cdnapi.AssetQuery{Limit: 10})
			if err != nil || len(assets) != 0 {
				t.Errorf("ListAssets = %d assets, %v; want none", len(assets), err)
			}
		})
	}
}
