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
// size, a failing move with its engine and stream, a failed move fails the
// Write even when fn ignores it, and the Writer refuses calls once fn has
// returned.
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
				{"a move from a position that is not stored", func(w cdnapi.Writer) error {
					return w.MoveLogPosition(ctx, cdnapi.LogPosition{Stream: "s", Offset: 10}, cdnapi.LogPosition{Stream: "s", Offset: 20})
				}, e.Name + ": move log position of s: " + cdnapi.ErrPositionMoved.Error()},
				{"a move that fn ignores", func(w cdnapi.Writer) error {
					_ = w.MoveLogPosition(ctx, cdnapi.LogPosition{Stream: "s", Offset: 10}, cdnapi.LogPosition{Stream: "s", Offset: 20})
					return w.PutFiles(ctx, storetest.Files(2, "default", 3))
				}, e.Name + ": move log position of s: " + cdnapi.ErrPositionMoved.Error()},
				{"a move to a negative offset", func(w cdnapi.Writer) error {
					return w.MoveLogPosition(ctx, cdnapi.LogPosition{}, cdnapi.LogPosition{Stream: "s", Offset: -1})
				}, e.Name + ": move log position of s: offset -1"},
				{"a move on the Writer of an ended Write", func(cdnapi.Writer) error {
					return kept.MoveLogPosition(ctx, cdnapi.LogPosition{}, cdnapi.LogPosition{Stream: "s"})
				}, e.Name + ": move log position of s: the Writer of a Write was used after fn returned"},
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
			positions, err := s.LogPositions(ctx)
			if err != nil || len(positions) != 0 {
				t.Errorf("LogPositions = %d positions, %v; want none", len(positions), err)
			}
		})
	}
}
