package storetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
)

// testDeleteFiles: DeleteFiles removes the named files of its project and
// no others; unknown IDs, another project's IDs and a second delete are
// no-ops; a delete inside a Write that fails is undone with the rest.
func testDeleteFiles(t *testing.T, s cdnapi.Store) {
	files := Files(50, "default", 41)
	others := Files(5, "other", 42)
	putFiles(t, s, files)
	putFiles(t, s, others)
	ids := []string{files[0].ID, files[17].ID, files[49].ID, "fil_NoSuchFile", others[2].ID}
	for range 2 { // the second delete finds nothing left to do
		if err := Writer(s).DeleteFiles(t.Context(), "default", ids); err != nil {
			t.Fatalf("DeleteFiles: %v", err)
		}
		want := sorted(slices.Delete(slices.Delete(slices.Delete(slices.Clone(files), 49, 50), 17, 18), 0, 1))
		if d := diffFiles(want, listFiles(t, s, "default", cdnapi.MaxLimit)); d != "" {
			t.Fatalf("after deleting three files: %s", d)
		}
		if d := diffFiles(sorted(others), listFiles(t, s, "other", cdnapi.MaxLimit)); d != "" {
			t.Fatalf("another project's file named with the wrong project: %s", d)
		}
	}
	if err := Writer(s).DeleteFiles(t.Context(), "default", nil); err != nil {
		t.Fatalf("DeleteFiles of no IDs: %v", err)
	}

	// More IDs than one statement of either engine carries, mixed with
	// unknown ones.
	var many []string
	for i, f := range files[1:49] {
		if i != 16 { // files[17] is gone already
			many = append(many, f.ID)
		}
		many = append(many, fmt.Sprintf("fil_missing%d", i))
	}
	for i := range 3000 {
		many = append(many, fmt.Sprintf("fil_absent%d", i))
	}
	boom := errors.New("boom")
	err := s.Write(t.Context(), func(w cdnapi.Writer) error {
		if err := w.DeleteFiles(t.Context(), "default", many); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Write = %v, want boom", err)
	}
	if got := listFiles(t, s, "default", cdnapi.MaxLimit); len(got) != 47 {
		t.Fatalf("after a delete rolled back, %d files are listed, want 47", len(got))
	}
	err = s.Write(t.Context(), func(w cdnapi.Writer) error {
		// Delete, then write one of them again: the put wins.
		if err := w.DeleteFiles(t.Context(), "default", many); err != nil {
			return err
		}
		return w.PutFiles(t.Context(), files[5:6])
	})
	if err != nil {
		t.Fatalf("Write: %v", err)
	}
	if d := diffFiles(files[5:6], listFiles(t, s, "default", cdnapi.MaxLimit)); d != "" {
		t.Fatalf("after deleting all but one: %s", d)
	}
}

// testWalkWithDeletes pages through the files while, between pages, rows
// are deleted (the row the cursor names, the next one, rows further on,
// rows already seen) and new ones are written, for the first 30 pages:
// every row that stayed is
// seen exactly once, in order, and no row is seen after it was deleted.
func testWalkWithDeletes(t *testing.T, s cdnapi.Store) {
	for _, limit := range []int{1, 7, 20, 100} {
		t.Run(fmt.Sprint("limit", limit), func(t *testing.T) {
			project := fmt.Sprint("walk", limit)
			before := Files(240, project, uint64(500+limit))
			putFiles(t, s, before)
			alive := sorted(before) // the rows there now, in list order
			deleted := make(map[string]bool)
			stayed := make(map[string]bool) // rows of before never deleted
			for _, f := range before {
				stayed[f.ID] = true
			}
			rng := rand.New(rand.NewPCG(uint64(limit), 9))
			counts := make(map[string]int)
			var last *cdnapi.File
			var after *cdnapi.Position
			for page := 0; ; page++ {
				if page > 10_000 {
					t.Fatal("the walk does not end")
				}
				got, err := s.ListFiles(t.Context(), cdnapi.FileQuery{Project: project, After: after, Limit: limit})
				if err != nil {
					t.Fatalf("ListFiles: %v", err)
				}
				for _, f := range got {
					counts[f.ID]++
					if deleted[f.ID] {
						t.Fatalf("page %d holds %s, deleted before the page was read", page, fileString(f))
					}
					if last != nil && Newest(last.Position(), f.Position()) >= 0 {
						t.Fatalf("page %d: %s does not come after %s", page, fileString(f), fileString(*last))
					}
					last = &f
				}
				if len(got) < limit {
					break
				}
				p := got[len(got)-1].Position()
				after = &p
				if page >= 30 {
					continue // enough changes; let the walk end
				}

				// Between pages: delete the cursor's row, the next row
				// (the first of the next page), a row further on and a
				// row already seen; write a row ahead of the cursor.
				at, _ := slices.BinarySearchFunc(alive, p, func(f cdnapi.File, p cdnapi.Position) int { return Newest(f.Position(), p) })
				var doomed []string
				pick := func(i int) {
					if i >= 0 && i < len(alive) && !slices.Contains(doomed, alive[i].ID) {
						doomed = append(doomed, alive[i].ID)
					}
				}
				pick(at)
				pick(at + 1)
				if rest := len(alive) - at - 2; rest > 0 {
					pick(at + 2 + rng.IntN(rest))
				}
				if at > 0 {
					pick(rng.IntN(at))
				}
				if err := Writer(s).DeleteFiles(t.Context(), project, doomed); err != nil {
					t.Fatalf("DeleteFiles: %v", err)
				}
				for _, id := range doomed {
					deleted[id] = true
					delete(stayed, id)
				}
				alive = slices.DeleteFunc(alive, func(f cdnapi.File) bool { return deleted[f.ID] })
				fresh := Files(1, project, uint64(100_000*limit+page))
				fresh[0].CreatedAt = p.CreatedAt.Add(-time.Duration(1+rng.IntN(3)) * time.Second) // ahead of the cursor
				putFiles(t, s, fresh)
				alive = sorted(append(alive, fresh[0]))
			}
			if len(stayed) == 0 || len(deleted) == 0 {
				t.Fatalf("%d rows stayed and %d were deleted: the test tests nothing", len(stayed), len(deleted))
			}
			for id := range stayed {
				if counts[id] != 1 {
					t.Errorf("file %s, never deleted, seen %d times, want once", id, counts[id])
				}
			}
			for id, n := range counts {
				if n > 1 {
					t.Errorf("file %s seen %d times", id, n)
				}
			}
		})
	}
}
