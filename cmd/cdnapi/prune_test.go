package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/apitest"
	"github.com/cdnapi/cdnapi/internal/demo"
	"github.com/cdnapi/cdnapi/internal/pgtest"
)

// oldAndNewAssets ingests demo regions and two assets into db: one created
// ten days ago, one a day ago. It returns their IDs, old first.
func oldAndNewAssets(t *testing.T, db string) (old, recent string) {
	t.Helper()
	mustRunCmd(t, demoRegionsNDJSON(t), "ingest", "regions", "--db", db)
	now := time.Now().UTC()
	var recs []map[string]any
	for i, age := range []time.Duration{240 * time.Hour, 24 * time.Hour} {
		a := cdnapi.Asset{ID: fmt.Sprintf("ast_Age%d", i), CreatedAt: now.Add(-age), Path: "/a.js", Bytes: 1,
			CacheStatus: cdnapi.CacheHit, Region: demo.Regions()[0].Code}
		recs = append(recs, assetRecord(a))
	}
	mustRunCmd(t, ndjsonLines(t, recs), "ingest", "assets", "--db", db)
	return "ast_Age0", "ast_Age1"
}

func TestPruneCommand(t *testing.T) {
	db := migratedDB(t, "prune.db")
	_, recent := oldAndNewAssets(t, db)
	out, _ := mustRunCmd(t, "", "prune", "--older-than", "168h", "--db", db)
	if !strings.HasPrefix(out, "deleted 1 assets created before ") {
		t.Errorf("prune printed %q", out)
	}
	if got := storedAssetIDs(t, db); !slices.Equal(got, []string{recent}) {
		t.Errorf("after prune: %v, want only %s", got, recent)
	}
	if out, _ := mustRunCmd(t, "", "prune", "--older-than", "168h", "--db", db); !strings.HasPrefix(out, "deleted 0 assets") {
		t.Errorf("a second prune printed %q", out)
	}

	for _, args := range [][]string{{"prune"}, {"prune", "--older-than", "-1h"}, {"prune", "--older-than", "0"}} {
		if _, _, err := runCmd(t, "", append(args, "--db", db)...); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "--older-than") {
			t.Errorf("%v: err = %v, want a usage error about --older-than", args, err)
		}
	}
}

// serve prunes in the background: with the default retention of 7 days the
// asset of ten days ago goes, and the one of yesterday stays.
func TestServePrunesOldAssets(t *testing.T) {
	db := migratedDB(t, "serve-prune.db")
	old, recent := oldAndNewAssets(t, db)
	s := startServe(t, nil, "--db", db, "--prune-interval", "50ms")
	v := apitest.NewValidator(t)
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, body := get(t, v, s.edge+"/api/v1/assets")
		if !strings.Contains(string(body), old) {
			if !strings.Contains(string(body), recent) {
				t.Fatalf("the recent asset went too: %s", body)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the asset of ten days ago is still served after 30s: %s", body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// serve --demo writes assets over the last demo.AssetSpan; the default
// retention must leave them all, with days to spare for a demo left running.
func TestServeRetentionFlags(t *testing.T) {
	if demo.AssetSpan+3*24*time.Hour > defaultAssetRetention {
		t.Errorf("the default retention of %v would soon prune the demo assets of the last %v", defaultAssetRetention, demo.AssetSpan)
	}
	for _, args := range [][]string{{"--asset-retention", "-1h"}, {"--prune-interval", "0s"}} {
		if _, _, err := runCmd(t, "", append([]string{"serve"}, args...)...); !errors.Is(err, errUsage) {
			t.Errorf("serve %v: %v, want a usage error", args, err)
		}
	}
}

// On PostgreSQL, prune makes the partitions from its cutoff on (the
// recent asset moves out of the default partition into its day's), deletes
// what the default partition holds before the cutoff, and, once a whole day
// is before the cutoff, drops it and says so.
func TestPruneCommandPostgres(t *testing.T) {
	db := pgtest.NewDatabase(t)
	mustRunCmd(t, "", "migrate", "--db", db)
	_, recent := oldAndNewAssets(t, db)
	out, _ := mustRunCmd(t, "", "prune", "--older-than", "168h", "--db", db)
	if !strings.HasPrefix(out, "deleted 1 assets created before ") {
		t.Errorf("prune printed %q", out)
	}
	if got := storedAssetIDs(t, db); !slices.Equal(got, []string{recent}) {
		t.Errorf("after prune: %v, want only %s", got, recent)
	}
	// The first prune made the partitions of the 7 days before today, the
	// recent asset's among them: each is wholly before a cutoff of a
	// second ago, and goes whole.
	out, _ = mustRunCmd(t, "", "prune", "--older-than", "1s", "--db", db)
	if !strings.HasPrefix(out, "dropped 7 partitions of about 1 assets, deleted 0 assets created before ") {
		t.Errorf("the second prune printed %q", out)
	}
	if got := storedAssetIDs(t, db); len(got) != 0 {
		t.Errorf("after the second prune: %v, want none", got)
	}
}
