package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
)

// testUpsertFiles replaces files by ID: a second write of a changed file
// leaves one row with the new values at its new place, writing the same
// files again changes nothing, and within one call the later of two files
// with one ID wins.
func testUpsertFiles(t *testing.T, s cdnapi.Store) {
	files := Files(40, "default", 21)
	putFiles(t, s, files)

	changed := files[7]
	changed.Filename = "renamed.pdf"
	changed.Bytes = 0
	changed.Checksum = "sha256:" + fmt.Sprintf("%064x", 7)
	changed.CreatedAt = Epoch.Add(time.Hour) // moves to the top
	putFiles(t, s, []cdnapi.File{changed})
	want := append([]cdnapi.File(nil), files...)
	want[7] = changed
	want = sorted(want)
	if d := diffFiles(want, listFiles(t, s, "default", cdnapi.MaxLimit)); d != "" {
		t.Fatalf("after replacing one file: %s", d)
	}

	putFiles(t, s, files[:20]) // the originals again
	putFiles(t, s, files[:20])
	again := append([]cdnapi.File(nil), files...)
	again = sorted(again)
	if d := diffFiles(again, listFiles(t, s, "default", cdnapi.MaxLimit)); d != "" {
		t.Fatalf("after writing the same files twice: %s", d)
	}

	moved := files[3]
	moved.Project = "elsewhere" // a file can change project
	last := files[3]
	last.Filename = "last-wins.txt"
	putFiles(t, s, []cdnapi.File{moved, last})
	got := listFiles(t, s, "default", cdnapi.MaxLimit)
	count := 0
	for _, f := range got {
		if f.ID == last.ID {
			count++
			if f.Filename != last.Filename {
				t.Errorf("file written twice in one call has filename %q, want the later %q", f.Filename, last.Filename)
			}
		}
	}
	if count != 1 {
		t.Errorf("file written twice in one call is listed %d times, want once", count)
	}
	if n := len(listFiles(t, s, "elsewhere", cdnapi.MaxLimit)); n != 0 {
		t.Errorf("project elsewhere has %d files, want none", n)
	}

	// A file written again with another project and time leaves its list
	// for the other project's: a store that keeps files in list order must
	// move the row, not add one.
	moved.CreatedAt = Epoch.Add(-time.Hour)
	putFiles(t, s, []cdnapi.File{moved})
	if d := diffFiles([]cdnapi.File{moved}, listFiles(t, s, "elsewhere", cdnapi.MaxLimit)); d != "" {
		t.Errorf("project elsewhere after moving a file there: %s", d)
	}
	for _, f := range listFiles(t, s, "default", cdnapi.MaxLimit) {
		if f.ID == moved.ID {
			t.Errorf("file %s is still listed in project default after moving to elsewhere", moved.ID)
		}
	}
}

func testUpsertAssets(t *testing.T, s cdnapi.Store) {
	assets := Assets(30, []string{"FRA1", "IAD1"}, 22)
	putAssets(t, s, assets)
	changed := assets[5]
	changed.Region = "NRT1" // moves to another region's list
	changed.CacheStatus = cdnapi.CacheRevalidated
	changed.Path = "/moved.js"
	changed.Bytes = 1
	putAssets(t, s, []cdnapi.Asset{changed})
	putAssets(t, s, []cdnapi.Asset{changed})
	want := append([]cdnapi.Asset(nil), assets...)
	want[5] = changed
	if d := diffAssets(sortedAssets(want), listAssets(t, s, "", cdnapi.MaxLimit)); d != "" {
		t.Errorf("after replacing one asset: %s", d)
	}
	if d := diffAssets([]cdnapi.Asset{changed}, listAssets(t, s, "NRT1", cdnapi.MaxLimit)); d != "" {
		t.Errorf("ListAssets(NRT1): %s", d)
	}
	for _, a := range listAssets(t, s, assets[5].Region, cdnapi.MaxLimit) {
		if a.ID == changed.ID {
			t.Errorf("asset %s still listed under %s after moving to NRT1", a.ID, assets[5].Region)
		}
	}
}

func testUpsertRegions(t *testing.T, s cdnapi.Store) {
	regions := Regions()
	putRegions(t, s, regions)
	changed := regions[1]
	changed.Name = "Frankfurt am Main"
	changed.Status = cdnapi.StatusMajorOutage
	putRegions(t, s, []cdnapi.Region{changed})
	putRegions(t, s, []cdnapi.Region{changed})
	got, err := s.Region(t.Context(), changed.Code)
	if err != nil || got != changed {
		t.Errorf("Region(%s) = %+v, %v; want %+v", changed.Code, got, err, changed)
	}
	list, err := s.ListRegions(t.Context())
	if err != nil || len(list) != len(regions) {
		t.Errorf("ListRegions = %d regions, %v; want %d", len(list), err, len(regions))
	}
}

// testAllOrNothing writes batches whose last item breaks a rule of the
// schema (a negative size, an unknown cache status or region status), after
// more valid items than one statement of a batched engine might carry:
// nothing of the batch may remain.
func testAllOrNothing(t *testing.T, s cdnapi.Store) {
	ctx := t.Context()
	files := Files(1200, "default", 23)
	files[len(files)-1].Bytes = -1
	if err := Writer(s).PutFiles(ctx, files); err == nil {
		t.Error("PutFiles with a negative size succeeded")
	}
	if n := len(listFiles(t, s, "default", cdnapi.MaxLimit)); n != 0 {
		t.Errorf("after a failed PutFiles, %d files remain", n)
	}

	assets := Assets(1200, []string{"FRA1"}, 24)
	assets[len(assets)-1].CacheStatus = "WARM"
	if err := Writer(s).PutAssets(ctx, assets); err == nil {
		t.Error("PutAssets with cache status WARM succeeded")
	}
	if n := len(listAssets(t, s, "", cdnapi.MaxLimit)); n != 0 {
		t.Errorf("after a failed PutAssets, %d assets remain", n)
	}

	regions := Regions()
	regions[len(regions)-1].Status = "fine"
	if err := Writer(s).PutRegions(ctx, regions); err == nil {
		t.Error("PutRegions with status fine succeeded")
	}
	if list, err := s.ListRegions(ctx); err != nil || len(list) != 0 {
		t.Errorf("after a failed PutRegions, ListRegions = %d regions, %v", len(list), err)
	}
}

func testCursorSecret(t *testing.T, s cdnapi.Store) {
	first, err := s.CursorSecret(t.Context())
	if err != nil {
		t.Fatalf("CursorSecret: %v", err)
	}
	if len(first) < cdnapi.MinCursorSecret {
		t.Fatalf("CursorSecret has %d bytes, want at least %d", len(first), cdnapi.MinCursorSecret)
	}
	if bytes.Equal(first, make([]byte, len(first))) {
		t.Fatal("CursorSecret is all zeros")
	}
	for range 3 {
		again, err := s.CursorSecret(t.Context())
		if err != nil || !bytes.Equal(again, first) {
			t.Fatalf("CursorSecret again = %x, %v; want %x", again, err, first)
		}
	}
	if _, err := cdnapi.NewCursorCodec(first); err != nil {
		t.Errorf("NewCursorCodec(CursorSecret()): %v", err)
	}
}

func testCursorSecretConcurrent(t *testing.T, s cdnapi.Store) {
	const callers = 8
	start := make(chan struct{})
	secrets := make([][]byte, callers)
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			<-start
			secrets[i], errs[i] = s.CursorSecret(t.Context())
		})
	}
	close(start)
	wg.Wait()
	for i := range callers {
		if errs[i] != nil {
			t.Fatalf("caller %d: CursorSecret: %v", i, errs[i])
		}
		if !bytes.Equal(secrets[i], secrets[0]) {
			t.Fatalf("caller %d got secret %x, caller 0 got %x", i, secrets[i], secrets[0])
		}
	}
}

func testComponentOverrides(t *testing.T, s cdnapi.Store) {
	ctx := t.Context()
	zone := time.FixedZone("UTC-7", -7*3600)
	upload := cdnapi.ComponentOverride{
		Name:      cdnapi.ComponentUpload,
		Status:    cdnapi.StatusMajorOutage,
		Until:     time.Date(2026, 11, 20, 5, 0, 0, 700_000_000, zone),
		UpdatedAt: time.Date(2026, 11, 20, 4, 0, 0, 300_000_000, zone),
	}
	scan := cdnapi.ComponentOverride{
		Name:      cdnapi.ComponentVirusScanning,
		Status:    cdnapi.StatusUnderMaintenance,
		UpdatedAt: Epoch,
	}
	for _, o := range []cdnapi.ComponentOverride{scan, upload} {
		if err := s.SetComponentOverride(ctx, o); err != nil {
			t.Fatalf("SetComponentOverride(%s): %v", o.Name, err)
		}
	}
	wantUpload := upload
	wantUpload.Until = upload.Until.Truncate(time.Second).UTC()
	wantUpload.UpdatedAt = upload.UpdatedAt.Truncate(time.Second).UTC()
	checkOverrides(t, s, "after setting two", wantUpload, scan)

	// Replacing drops the end time when the new override has none.
	replaced := cdnapi.ComponentOverride{Name: cdnapi.ComponentUpload, Status: cdnapi.StatusOperational, UpdatedAt: Epoch.Add(time.Minute)}
	if err := s.SetComponentOverride(ctx, replaced); err != nil {
		t.Fatalf("SetComponentOverride: %v", err)
	}
	checkOverrides(t, s, "after replacing", replaced, scan)

	// A zero UpdatedAt is stored as the time of the call.
	before := time.Now().Truncate(time.Second)
	if err := s.SetComponentOverride(ctx, cdnapi.ComponentOverride{Name: cdnapi.ComponentVirusScanning, Status: cdnapi.StatusPartialOutage}); err != nil {
		t.Fatalf("SetComponentOverride: %v", err)
	}
	after := time.Now()
	got, err := s.ComponentOverrides(ctx)
	if err != nil || len(got) != 2 {
		t.Fatalf("ComponentOverrides = %v, %v", got, err)
	}
	if u := got[1].UpdatedAt; u.Before(before) || u.After(after) || u.Location() != time.UTC {
		t.Errorf("UpdatedAt of an override set without one = %v, want the time of the call, in UTC", u)
	}

	for _, name := range []string{cdnapi.ComponentVirusScanning, cdnapi.ComponentVirusScanning, "No Such Component"} {
		if err := s.ClearComponentOverride(ctx, name); err != nil {
			t.Errorf("ClearComponentOverride(%q): %v", name, err)
		}
	}
	checkOverrides(t, s, "after clearing", replaced)

	if err := s.SetComponentOverride(ctx, cdnapi.ComponentOverride{Name: cdnapi.ComponentUpload, Status: "broken"}); err == nil {
		t.Error("SetComponentOverride with status broken succeeded")
	}
	checkOverrides(t, s, "after a refused override", replaced)
}

// checkOverrides checks that the stored overrides are want, in order.
func checkOverrides(t *testing.T, s cdnapi.Store, when string, want ...cdnapi.ComponentOverride) {
	t.Helper()
	got, err := s.ComponentOverrides(t.Context())
	if err != nil {
		t.Fatalf("%s: ComponentOverrides: %v", when, err)
	}
	if len(got) != len(want) {
		t.Fatalf("%s: %d overrides, want %d: %+v", when, len(got), len(want), got)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Name != w.Name || g.Status != w.Status || !sameTime(w.UpdatedAt, g.UpdatedAt) ||
			g.Until.IsZero() != w.Until.IsZero() || !w.Until.IsZero() && !sameTime(w.Until, g.Until) {
			t.Errorf("%s: override %d = %+v, want %+v", when, i, g, w)
		}
	}
}

// testClosed closes the store and calls every method: each must return an
// error, and none may panic.
func testClosed(t *testing.T, s cdnapi.Store) {
	ctx := t.Context()
	putRegions(t, s, Regions())
	putFiles(t, s, Files(3, "default", 25))
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	after := cdnapi.Position{CreatedAt: Epoch, ID: "fil_x"}
	calls := map[string]func() error{
		"ListFiles": func() error {
			_, err := s.ListFiles(ctx, cdnapi.FileQuery{Project: "default", Limit: 10})
			return err
		},
		"ListFiles after": func() error {
			_, err := s.ListFiles(ctx, cdnapi.FileQuery{Project: "default", After: &after, Limit: 10})
			return err
		},
		"ListAssets": func() error {
			_, err := s.ListAssets(ctx, cdnapi.AssetQuery{Region: "FRA1", Limit: 10})
			return err
		},
		"ListRegions": func() error { _, err := s.ListRegions(ctx); return err },
		"Region":      func() error { _, err := s.Region(ctx, "FRA1"); return err },
		"PutFiles":    func() error { return Writer(s).PutFiles(ctx, Files(1, "default", 26)) },
		"PutAssets":   func() error { return Writer(s).PutAssets(ctx, Assets(1, []string{"FRA1"}, 27)) },
		"PutRegions":  func() error { return Writer(s).PutRegions(ctx, Regions()) },
		"CursorSecret": func() error {
			_, err := s.CursorSecret(ctx)
			return err
		},
		"ComponentOverrides": func() error { _, err := s.ComponentOverrides(ctx); return err },
		"SetComponentOverride": func() error {
			return s.SetComponentOverride(ctx, cdnapi.ComponentOverride{Name: cdnapi.ComponentUpload, Status: cdnapi.StatusOperational})
		},
		"ClearComponentOverride": func() error { return s.ClearComponentOverride(ctx, cdnapi.ComponentUpload) },
		"Ping":                   func() error { return s.Ping(ctx) },
		"Write": func() error {
			return s.Write(ctx, func(w cdnapi.Writer) error { return w.PutFiles(ctx, Files(1, "default", 28)) })
		},
		"DeleteAssetsBefore": func() error { _, err := s.DeleteAssetsBefore(ctx, Epoch, 10); return err },
		"SetRegionStatus":    func() error { return s.SetRegionStatus(ctx, "FRA1", cdnapi.StatusMajorOutage, time.Time{}) },
		"MoveLogPosition": func() error {
			return Writer(s).MoveLogPosition(ctx, cdnapi.LogPosition{}, cdnapi.LogPosition{Stream: "a", Path: "/a"})
		},
		"LogPosition":       func() error { _, err := s.LogPosition(ctx, "a"); return err },
		"LogPositions":      func() error { _, err := s.LogPositions(ctx); return err },
		"DeleteLogPosition": func() error { return s.DeleteLogPosition(ctx, "a") },
	}
	for name, call := range calls {
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("%s on a closed store panicked: %v", name, p)
				}
			}()
			if err := call(); err == nil {
				t.Errorf("%s on a closed store returned no error", name)
			}
		}()
	}
}

// testSetRegionStatus sets the status of one region and leaves the others
// be; an unknown code is ErrNotFound, and the schema refuses an invalid
// status, which callers check before.
func testSetRegionStatus(t *testing.T, s cdnapi.Store) {
	ctx := t.Context()
	regions := Regions()
	putRegions(t, s, regions)
	want := append([]cdnapi.Region(nil), regions...)
	SortRegions(want)
	check := func(when string) {
		t.Helper()
		got, err := s.ListRegions(ctx)
		if err != nil {
			t.Fatalf("%s: ListRegions: %v", when, err)
		}
		if d := diffRegions(want, got); d != "" {
			t.Errorf("%s: %s", when, d)
		}
	}

	for _, status := range []cdnapi.Status{cdnapi.StatusUnderMaintenance, cdnapi.StatusUnderMaintenance, cdnapi.StatusOperational} {
		if err := s.SetRegionStatus(ctx, "GRU1", status, time.Time{}); err != nil {
			t.Fatalf("SetRegionStatus(GRU1, %s): %v", status, err)
		}
		for i := range want {
			if want[i].Code == "GRU1" {
				want[i].Status = status
			}
		}
		check("after setting GRU1 to " + string(status))
		if r, err := s.Region(ctx, "GRU1"); err != nil || r.Status != status {
			t.Errorf("Region(GRU1) = %+v, %v; want status %s", r, err, status)
		}
	}

	for _, code := range []string{"XXX9", "gru1", ""} {
		if err := s.SetRegionStatus(ctx, code, cdnapi.StatusMajorOutage, time.Time{}); !errors.Is(err, cdnapi.ErrNotFound) {
			t.Errorf("SetRegionStatus(%q) = %v, want ErrNotFound", code, err)
		}
	}
	for _, status := range []cdnapi.Status{"broken", "", "Operational"} {
		if err := s.SetRegionStatus(ctx, "FRA1", status, time.Time{}); err == nil {
			t.Errorf("SetRegionStatus(FRA1, %q) succeeded", status)
		}
	}
	check("after refused calls")
}
