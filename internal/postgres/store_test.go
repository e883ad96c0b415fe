package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/pgtest"
	"github.com/cdnapi/cdnapi/internal/storetest"
)

var t0 = time.Date(2026, 11, 20, 14, 3, 7, 0, time.UTC)

func file(id string, created time.Time) cdnapi.File {
	return cdnapi.File{
		ID: id, Project: "default", CreatedAt: created, Filename: id + ".bin", Bytes: 42,
		Checksum: "sha256:" + fmt.Sprintf("%064x", len(id)),
	}
}

func asset(id, region string, created time.Time) cdnapi.Asset {
	return cdnapi.Asset{ID: id, CreatedAt: created, Path: "/" + id, Bytes: 7, CacheStatus: cdnapi.CacheHit, Region: region}
}

func fileIDs(files []cdnapi.File) []string {
	ids := make([]string, len(files))
	for i, f := range files {
		ids[i] = f.ID
	}
	return ids
}

func assetIDs(assets []cdnapi.Asset) []string {
	ids := make([]string, len(assets))
	for i, a := range assets {
		ids[i] = a.ID
	}
	return ids
}

// The lists order by created_at DESC, then id DESC in byte order, whatever
// the database's collation; the test cluster's default collation is en-US,
// which would put "fil_a" before "fil_B".
func TestListFilesOrderAndKeyset(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	files := []cdnapi.File{
		file("fil_a", t0), file("fil_B", t0), file("fil_b", t0), file("fil_A", t0),
		file("fil_Z9", t0.Add(-time.Second)), file("fil_new", t0.Add(time.Hour)),
	}
	other := file("fil_other", t0.Add(2*time.Hour))
	other.Project = "elsewhere"
	if err := storetest.Writer(s).PutFiles(ctx, append(files, other)); err != nil {
		t.Fatal(err)
	}
	want := []string{"fil_new", "fil_b", "fil_a", "fil_B", "fil_A", "fil_Z9"}

	tests := []struct {
		name  string
		after *cdnapi.Position
		limit int
		want  []string
	}{
		{"first page", nil, 100, want},
		{"limit", nil, 2, want[:2]},
		{"after a row", &cdnapi.Position{CreatedAt: t0, ID: "fil_a"}, 100, want[3:]},
		{"after a position between rows", &cdnapi.Position{CreatedAt: t0, ID: "fil_Aa"}, 2, []string{"fil_A", "fil_Z9"}},
		{"after the last row", &cdnapi.Position{CreatedAt: t0.Add(-time.Second), ID: "fil_Z9"}, 10, []string{}},
		{"position in a local zone", &cdnapi.Position{CreatedAt: t0.In(time.FixedZone("X", 3600)), ID: "fil_a"}, 1, []string{"fil_B"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.ListFiles(ctx, cdnapi.FileQuery{Project: "default", After: tt.after, Limit: tt.limit})
			if err != nil {
				t.Fatal(err)
			}
			if ids := fileIDs(got); !slices.Equal(ids, tt.want) {
				t.Errorf("ids = %q, want %q", ids, tt.want)
			}
		})
	}
}

func TestListAssetsRegionFilter(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	err := storetest.Writer(s).PutAssets(ctx, []cdnapi.Asset{
		asset("ast_1", "FRA1", t0), asset("ast_2", "AMS1", t0.Add(time.Second)),
		asset("ast_3", "FRA1", t0.Add(2*time.Second)), asset("ast_4", "AMS1", t0.Add(3*time.Second)),
	})
	if err != nil {
		t.Fatal(err)
	}
	after := &cdnapi.Position{CreatedAt: t0.Add(2 * time.Second), ID: "ast_3"}
	tests := []struct {
		region string
		after  *cdnapi.Position
		want   []string
	}{
		{"", nil, []string{"ast_4", "ast_3", "ast_2", "ast_1"}},
		{"", after, []string{"ast_2", "ast_1"}},
		{"FRA1", nil, []string{"ast_3", "ast_1"}},
		{"FRA1", after, []string{"ast_1"}},
		{"LHR1", nil, []string{}},
	}
	for _, tt := range tests {
		got, err := s.ListAssets(ctx, cdnapi.AssetQuery{Region: tt.region, After: tt.after, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if ids := assetIDs(got); !slices.Equal(ids, tt.want) {
			t.Errorf("region %q after %v: ids = %q, want %q", tt.region, tt.after, ids, tt.want)
		}
	}
}

func TestLimitBelowOneIsRefused(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	if _, err := s.ListFiles(t.Context(), cdnapi.FileQuery{Project: "default", Limit: 0}); err == nil {
		t.Error("ListFiles with limit 0 succeeded")
	}
	if _, err := s.ListAssets(t.Context(), cdnapi.AssetQuery{Limit: -1}); err == nil {
		t.Error("ListAssets with limit -1 succeeded")
	}
}

// Times come back as whole seconds in UTC, and Unicode text round-trips.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	local := time.Date(2026, 1, 2, 3, 4, 5, 999_999_999, time.FixedZone("CET", 3600))
	f := file("fil_u", local)
	f.Filename = "Überweisung 😀 – 報告書.pdf"
	f.Bytes = 1 << 40
	a := asset("ast_u", "FRA1", local)
	a.Path = "/bilder/ñandú.webp"
	a.CacheStatus = cdnapi.CacheRevalidated
	if err := storetest.Writer(s).PutFiles(ctx, []cdnapi.File{f}); err != nil {
		t.Fatal(err)
	}
	if err := storetest.Writer(s).PutAssets(ctx, []cdnapi.Asset{a}); err != nil {
		t.Fatal(err)
	}
	files, err := s.ListFiles(ctx, cdnapi.FileQuery{Project: "default", Limit: 1})
	if err != nil || len(files) != 1 {
		t.Fatalf("ListFiles = %v, %v", files, err)
	}
	wantTime := time.Date(2026, 1, 2, 2, 4, 5, 0, time.UTC)
	f.CreatedAt = wantTime
	if files[0] != f || files[0].CreatedAt.Location() != time.UTC {
		t.Errorf("file = %+v, want %+v in UTC", files[0], f)
	}
	assets, err := s.ListAssets(ctx, cdnapi.AssetQuery{Limit: 1})
	if err != nil || len(assets) != 1 {
		t.Fatalf("ListAssets = %v, %v", assets, err)
	}
	a.CreatedAt = wantTime
	if assets[0] != a || assets[0].CreatedAt.Location() != time.UTC {
		t.Errorf("asset = %+v, want %+v in UTC", assets[0], a)
	}
}

// An upsert replaces rows by key, the last of equal keys in one batch wins,
// and a batch that fails writes nothing.
func TestPutUpsertsAllOrNothing(t *testing.T) {
	t.Parallel()
	for _, n := range []int{3, copyThreshold + 1} { // the unnest and the COPY path
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			t.Parallel()
			s := newStore(t)
			ctx := t.Context()
			batch := make([]cdnapi.File, n)
			for i := range batch {
				batch[i] = file(fmt.Sprintf("fil_%d", i), t0.Add(time.Duration(i)*time.Second))
			}
			if err := storetest.Writer(s).PutFiles(ctx, batch); err != nil {
				t.Fatal(err)
			}
			first, last := file("fil_0", t0), file("fil_0", t0.Add(-time.Hour))
			first.Filename, last.Filename = "first.txt", "last.txt"
			if err := storetest.Writer(s).PutFiles(ctx, append(batch[1:], first, last)); err != nil {
				t.Fatal(err)
			}
			all, err := s.ListFiles(ctx, cdnapi.FileQuery{Project: "default", Limit: n + 1})
			if err != nil {
				t.Fatal(err)
			}
			if len(all) != n || all[n-1] != last {
				t.Fatalf("got %d files ending in %+v, want %d ending in %+v", len(all), all[len(all)-1], n, last)
			}

			bad := append(slices.Clone(batch), file("fil_bad", t0))
			bad[0].Filename = "changed"
			bad[len(bad)-1].Bytes = -1 // violates the CHECK
			if err := storetest.Writer(s).PutFiles(ctx, bad); err == nil {
				t.Fatal("PutFiles with a negative size succeeded")
			}
			again, err := s.ListFiles(ctx, cdnapi.FileQuery{Project: "default", Limit: n + 1})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(again, all) {
				t.Error("a failed batch changed the table")
			}
		})
	}
}

func TestRegions(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	if _, err := s.Region(ctx, "FRA1"); !errors.Is(err, cdnapi.ErrNotFound) {
		t.Fatalf("Region on an empty store: %v, want ErrNotFound", err)
	}
	fra := cdnapi.Region{Code: "FRA1", Name: "Frankfurt", Zone: "eu-central", Country: "DE", Status: cdnapi.StatusOperational}
	ams := cdnapi.Region{Code: "AMS1", Name: "Amsterdam", Zone: "eu-west", Country: "NL", Status: cdnapi.StatusOperational}
	down := fra
	down.Status = cdnapi.StatusMajorOutage
	if err := storetest.Writer(s).PutRegions(ctx, []cdnapi.Region{fra, ams, down}); err != nil {
		t.Fatal(err)
	}
	got, err := s.ListRegions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []cdnapi.Region{ams, down}; !slices.Equal(got, want) {
		t.Errorf("ListRegions = %+v, want %+v", got, want)
	}
	if r, err := s.Region(ctx, "FRA1"); err != nil || r != down {
		t.Errorf("Region(FRA1) = %+v, %v; want %+v", r, err, down)
	}
}

// Many first callers at once, as replicas starting together, all get the
// one secret that was stored.
func TestCursorSecretConcurrentFirstUse(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	stores := make([]*Store, 4) // separate pools, as separate processes
	for i := range stores {
		stores[i] = openStore(t, dsn, Options{})
	}
	secrets := make([][]byte, 16)
	var wg sync.WaitGroup
	for i := range secrets {
		wg.Go(func() {
			var err error
			if secrets[i], err = stores[i%len(stores)].CursorSecret(t.Context()); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for _, s := range secrets[1:] {
		if !bytes.Equal(s, secrets[0]) {
			t.Fatal("concurrent first callers got different secrets")
		}
	}
	if len(secrets[0]) != cdnapi.CursorSecretSize {
		t.Errorf("secret has %d bytes, want %d", len(secrets[0]), cdnapi.CursorSecretSize)
	}
}

func TestComponentOverrides(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	upload := cdnapi.ComponentOverride{
		Name: cdnapi.ComponentUpload, Status: cdnapi.StatusUnderMaintenance,
		Until: t0.Add(time.Hour + 500*time.Millisecond), UpdatedAt: t0,
	}
	virus := cdnapi.ComponentOverride{Name: cdnapi.ComponentVirusScanning, Status: cdnapi.StatusPartialOutage, UpdatedAt: t0}
	for _, o := range []cdnapi.ComponentOverride{virus, upload} {
		if err := s.SetComponentOverride(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetComponentOverride(ctx, cdnapi.ComponentOverride{Name: "API", Status: "broken"}); err == nil {
		t.Error("an invalid status was stored")
	}
	got, err := s.ComponentOverrides(ctx)
	if err != nil {
		t.Fatal(err)
	}
	upload.Until = t0.Add(time.Hour) // whole seconds
	if want := []cdnapi.ComponentOverride{upload, virus}; !slices.Equal(got, want) {
		t.Errorf("ComponentOverrides = %+v, want %+v", got, want)
	}
	if err := s.ClearComponentOverride(ctx, cdnapi.ComponentUpload); err != nil {
		t.Fatal(err)
	}
	if err := s.ClearComponentOverride(ctx, cdnapi.ComponentUpload); err != nil {
		t.Errorf("clearing twice: %v", err)
	}
	if got, err := s.ComponentOverrides(ctx); err != nil || len(got) != 1 || got[0] != virus {
		t.Errorf("after clear: %+v, %v; want only %+v", got, err, virus)
	}
}

// After Close every method fails and none panics.
func TestClosed(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	s.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	calls := callEveryMethod(s)
	for name, call := range calls {
		if err := call(ctx); err == nil {
			t.Errorf("%s on a closed store succeeded", name)
		}
	}
}

// callEveryMethod returns a call of each Store method that needs the
// server.
func callEveryMethod(s *Store) map[string]func(context.Context) error {
	f := []cdnapi.File{file("fil_x", t0)}
	return map[string]func(context.Context) error{
		"ListFiles": func(ctx context.Context) error {
			_, err := s.ListFiles(ctx, cdnapi.FileQuery{Project: "default", Limit: 20})
			return err
		},
		"ListAssets": func(ctx context.Context) error {
			_, err := s.ListAssets(ctx, cdnapi.AssetQuery{Region: "FRA1", Limit: 20})
			return err
		},
		"ListRegions": func(ctx context.Context) error { _, err := s.ListRegions(ctx); return err },
		"Region":      func(ctx context.Context) error { _, err := s.Region(ctx, "FRA1"); return err },
		"PutFiles":    func(ctx context.Context) error { return storetest.Writer(s).PutFiles(ctx, f) },
		"PutAssets": func(ctx context.Context) error {
			return storetest.Writer(s).PutAssets(ctx, []cdnapi.Asset{asset("ast_x", "FRA1", t0)})
		},
		"PutRegions": func(ctx context.Context) error {
			return storetest.Writer(s).PutRegions(ctx, []cdnapi.Region{{Code: "FRA1", Name: "F", Zone: "eu-central", Country: "DE", Status: "operational"}})
		},
		"CursorSecret":       func(ctx context.Context) error { _, err := s.CursorSecret(ctx); return err },
		"ComponentOverrides": func(ctx context.Context) error { _, err := s.ComponentOverrides(ctx); return err },
		"SetComponentOverride": func(ctx context.Context) error {
			return s.SetComponentOverride(ctx, cdnapi.ComponentOverride{Name: "API", Status: "operational"})
		},
		"ClearComponentOverride": func(ctx context.Context) error { return s.ClearComponentOverride(ctx, "API") },
		"Write": func(ctx context.Context) error {
			return s.Write(ctx, func(w cdnapi.Writer) error { return w.PutFiles(ctx, f) })
		},
		"DeleteAssetsBefore": func(ctx context.Context) error { _, err := s.DeleteAssetsBefore(ctx, t0, 10); return err },
		"SetRegionStatus": func(ctx context.Context) error {
			return s.SetRegionStatus(ctx, "FRA1", cdnapi.StatusMajorOutage, time.Time{})
		},
		"Ping":        s.Ping,
		"pingPrimary": s.pingPrimary,
		"Migrate":     s.Migrate,
		"checkSchema": s.checkSchema,
	}
}

// pingPrimary checks that the primary answers a query within ctx, as Ping
// does the pool the lists read from.
func (s *Store) pingPrimary(ctx context.Context) error {
	var one int
	if err := s.primary.QueryRow(ctx, `SELECT 1`).Scan(&one); err != nil {
		return fmt.Errorf("postgres: ping primary: %w", err)
	}
	return nil
}
