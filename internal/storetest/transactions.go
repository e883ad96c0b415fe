package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/cdnapi/cdnapi"
)

// writeBatch is the size of the asset batches the Write cases write: above
// the size from which an engine may switch to bulk loading (PostgreSQL's
// COPY through a staging table), so that two batches in one transaction
// exercise whatever such a path keeps between batches.
const writeBatch = 2100

// contents is everything a case may have written: the files of project
// "default", every asset and every region, each in list order.
type contents struct {
	files   []cdnapi.File
	assets  []cdnapi.Asset
	regions []cdnapi.Region
}

// readContents reads the store's contents by walking the lists.
func readContents(t *testing.T, s cdnapi.Store) contents {
	t.Helper()
	regions, err := s.ListRegions(t.Context())
	if err != nil {
		t.Fatalf("ListRegions: %v", err)
	}
	return contents{
		files:   walkFiles(t, s, "default", cdnapi.MaxLimit, nil),
		assets:  walkAssets(t, s, "", cdnapi.MaxLimit),
		regions: regions,
	}
}

// diff describes the first difference between want and got, or returns "".
func (want contents) diff(got contents) string {
	if d := diffFiles(want.files, got.files); d != "" {
		return "files: " + d
	}
	if d := diffAssets(want.assets, got.assets); d != "" {
		return "assets: " + d
	}
	if d := diffRegions(want.regions, got.regions); d != "" {
		return "regions: " + d
	}
	return ""
}

// writeData is what the Write cases write: regions, two large batches of
// assets and a small one, and files, all in one transaction.
type writeData struct {
	regions []cdnapi.Region
	assets  [3][]cdnapi.Asset
	files   []cdnapi.File
}

func newWriteData() writeData {
	regions := Regions()
	codes := RegionCodes(regions)
	return writeData{
		regions: regions,
		assets:  [3][]cdnapi.Asset{Assets(writeBatch, codes, 41), Assets(writeBatch, codes, 42), Assets(30, codes, 43)},
		files:   Files(150, "default", 44),
	}
}

// put writes d through w, batch by batch.
func (d writeData) put(ctx context.Context, w cdnapi.Writer) error {
	if err := w.PutRegions(ctx, d.regions); err != nil {
		return err
	}
	for _, batch := range d.assets {
		if err := w.PutAssets(ctx, batch); err != nil {
			return err
		}
	}
	return w.PutFiles(ctx, d.files)
}

// want returns the contents of a store that held base and then had d
// written.
func (d writeData) want(base contents) contents {
	c := contents{
		files:   append(append([]cdnapi.File(nil), base.files...), d.files...),
		regions: append([]cdnapi.Region(nil), d.regions...),
	}
	c.assets = append(c.assets, base.assets...)
	for _, batch := range d.assets {
		c.assets = append(c.assets, batch...)
	}
	SortFiles(c.files)
	SortAssets(c.assets)
	SortRegions(c.regions)
	return c
}

// testWriteCommits writes several batches of every kind in one Write: all
// of them are there afterwards, beside what was there before.
func testWriteCommits(t *testing.T, s cdnapi.Store) {
	putFiles(t, s, Files(40, "default", 40))
	base := readContents(t, s)
	d := newWriteData()
	if err := s.Write(t.Context(), func(w cdnapi.Writer) error { return d.put(t.Context(), w) }); err != nil {
		t.Fatalf("Write: %v", err)
	}
	if diff := d.want(base).diff(readContents(t, s)); diff != "" {
		t.Errorf("after Write: %s", diff)
	}
	// Writing the same again, in one transaction, changes nothing.
	if err := s.Write(t.Context(), func(w cdnapi.Writer) error { return d.put(t.Context(), w) }); err != nil {
		t.Fatalf("Write again: %v", err)
	}
	if diff := d.want(base).diff(readContents(t, s)); diff != "" {
		t.Errorf("after writing the same again: %s", diff)
	}
}

// testWriteRollsBack ends Writes in every way but success, after several
// batches have gone through w, one of them replacing a stored row: none of
// it may remain.
func testWriteRollsBack(t *testing.T, s cdnapi.Store) {
	putRegions(t, s, Regions())
	putFiles(t, s, Files(40, "default", 45))
	putAssets(t, s, Assets(60, RegionCodes(Regions()), 46))
	before := readContents(t, s)
	d := newWriteData()
	d.regions[0].Status = cdnapi.StatusMajorOutage // replaces a stored region
	d.files = append(d.files, before.files[3])
	d.files[len(d.files)-1].Filename = "replaced.bin" // replaces a stored file
	refused := errors.New("the caller gives up")

	tests := []struct {
		name string
		fn   func(ctx context.Context, cancel func(), w cdnapi.Writer) error
		want error // what Write's error must be or wrap, when set
	}{
		{"fn fails", func(ctx context.Context, _ func(), w cdnapi.Writer) error {
			if err := d.put(ctx, w); err != nil {
				return err
			}
			return refused
		}, refused},
		{"a batch fails", func(ctx context.Context, _ func(), w cdnapi.Writer) error {
			if err := d.put(ctx, w); err != nil {
				return err
			}
			bad := Assets(10, []string{"FRA1"}, 47)
			bad[9].CacheStatus = "WARM"
			return w.PutAssets(ctx, bad)
		}, nil},
		{"ctx ends and fn says so", func(ctx context.Context, cancel func(), w cdnapi.Writer) error {
			if err := d.put(ctx, w); err != nil {
				return err
			}
			cancel()
			return ctx.Err()
		}, context.Canceled},
		{"ctx ends and fn returns nil", func(ctx context.Context, cancel func(), w cdnapi.Writer) error {
			if err := d.put(ctx, w); err != nil {
				return err
			}
			cancel()
			return nil
		}, nil},
		{"ctx ends between batches", func(ctx context.Context, cancel func(), w cdnapi.Writer) error {
			if err := w.PutAssets(ctx, d.assets[0]); err != nil {
				return err
			}
			cancel()
			if err := w.PutAssets(ctx, d.assets[1]); err == nil {
				t.Error("PutAssets after ctx ended succeeded")
			}
			return nil
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			err := s.Write(ctx, func(w cdnapi.Writer) error { return tt.fn(ctx, cancel, w) })
			if err == nil {
				t.Fatal("Write succeeded")
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("Write = %v, want %v", err, tt.want)
			}
			if diff := before.diff(readContents(t, s)); diff != "" {
				t.Errorf("the store changed: %s", diff)
			}
		})
	}
}

// testWriteIsolated reads the store while a Write is under way: what fn has
// written is invisible to the store's readers until the commit. The
// Writer is dead once Write returns.
func testWriteIsolated(t *testing.T, s cdnapi.Store) {
	putFiles(t, s, Files(30, "default", 48))
	before := readContents(t, s)
	d := newWriteData()
	var kept cdnapi.Writer
	err := s.Write(t.Context(), func(w cdnapi.Writer) error {
		kept = w
		if err := d.put(t.Context(), w); err != nil {
			return err
		}
		if diff := before.diff(readContents(t, s)); diff != "" {
			t.Errorf("during Write, a reader sees uncommitted rows: %s", diff)
		}
		if _, err := s.Region(t.Context(), d.regions[0].Code); !errors.Is(err, cdnapi.ErrNotFound) {
			t.Errorf("during Write, Region of an uncommitted region = %v, want ErrNotFound", err)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Write: %v", err)
	}
	after := d.want(before)
	if diff := after.diff(readContents(t, s)); diff != "" {
		t.Fatalf("after Write: %s", diff)
	}
	if err := kept.PutFiles(t.Context(), Files(1, "default", 49)); err == nil {
		t.Error("a Writer used after its Write returned succeeded")
	}
	if diff := after.diff(readContents(t, s)); diff != "" {
		t.Errorf("a Writer used after its Write returned changed the store: %s", diff)
	}
}

// testWriteConcurrent writes the batches of one Write from several
// goroutines at once, among empty batches: w takes them in turn, the empty
// ones write nothing, and all of it is committed.
func testWriteConcurrent(t *testing.T, s cdnapi.Store) {
	putFiles(t, s, Files(30, "default", 50))
	before := readContents(t, s)
	d := newWriteData()
	err := s.Write(t.Context(), func(w cdnapi.Writer) error {
		ctx := t.Context()
		if err := w.PutRegions(ctx, d.regions); err != nil { // the assets name them
			return err
		}
		puts := []func() error{
			func() error { return w.PutFiles(ctx, d.files) },
			func() error { return w.PutFiles(ctx, nil) },
			func() error { return w.PutAssets(ctx, []cdnapi.Asset{}) },
			func() error { return w.PutRegions(ctx, nil) },
		}
		for _, batch := range d.assets {
			puts = append(puts, func() error { return w.PutAssets(ctx, batch) })
		}
		errs := make(chan error, len(puts))
		for _, put := range puts {
			go func() { errs <- put() }()
		}
		var all []error
		for range puts {
			all = append(all, <-errs)
		}
		return errors.Join(all...)
	})
	if err != nil {
		t.Fatalf("Write: %v", err)
	}
	if diff := d.want(before).diff(readContents(t, s)); diff != "" {
		t.Errorf("after Write: %s", diff)
	}
}
