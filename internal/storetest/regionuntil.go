package storetest

import (
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
)

// testRegionStatusUntil checks statuses with an end: until then the region
// shows the status and its end; from then on, every read shows it
// operational, with the status that ended in Expired; a status without an
// end, or a later ingest of another status, drops the end.
func testRegionStatusUntil(t *testing.T, s cdnapi.Store) {
	ctx := t.Context()
	putRegions(t, s, Regions())
	now := time.Now().UTC().Truncate(time.Second)
	later, earlier := now.Add(time.Hour), now.Add(-time.Second)
	const (
		maint = cdnapi.StatusUnderMaintenance
		down  = cdnapi.StatusMajorOutage
		op    = cdnapi.StatusOperational
	)
	set := func(code string, status cdnapi.Status, until time.Time) {
		t.Helper()
		if err := s.SetRegionStatus(ctx, code, status, until); err != nil {
			t.Fatalf("SetRegionStatus(%s, %s, %v): %v", code, status, until, err)
		}
	}
	type want struct {
		status, expired cdnapi.Status
		until           time.Time
	}
	check := func(step string, wants map[string]want) {
		t.Helper()
		list, err := s.ListRegions(ctx)
		if err != nil {
			t.Fatalf("%s: ListRegions: %v", step, err)
		}
		byCode := map[string]cdnapi.Region{}
		for _, r := range list {
			byCode[r.Code] = r
		}
		for code, w := range wants {
			one, err := s.Region(ctx, code)
			if err != nil {
				t.Fatalf("%s: Region(%s): %v", step, code, err)
			}
			for how, r := range map[string]cdnapi.Region{"ListRegions": byCode[code], "Region": one} {
				if r.Status != w.status || r.Expired != w.expired || !r.Until.Equal(w.until) {
					t.Errorf("%s: %s %s: status %s, expired %q, until %v; want %s, %q, %v",
						step, how, code, r.Status, r.Expired, r.Until, w.status, w.expired, w.until)
				}
			}
		}
	}

	set("FRA1", maint, later)
	set("GRU1", down, earlier) // an end in the past: over at once
	set("IAD1", maint, time.Time{})
	check("set", map[string]want{
		"FRA1": {status: maint, until: later},
		"GRU1": {status: op, expired: down, until: earlier},
		"IAD1": {status: maint},
	})

	// A status without an end replaces one with an end, and the reverse.
	set("FRA1", down, time.Time{})
	set("IAD1", maint, earlier)
	check("replaced", map[string]want{
		"FRA1": {status: down},
		"IAD1": {status: op, expired: maint, until: earlier},
	})

	// An ingest that writes another status ends the end; writing the same
	// status keeps it.
	regions := Regions()
	for i := range regions {
		switch regions[i].Code {
		case "IAD1":
			regions[i].Status = cdnapi.StatusPartialOutage
		case "GRU1":
			regions[i].Status = down
		}
	}
	putRegions(t, s, regions)
	check("ingested", map[string]want{
		"IAD1": {status: cdnapi.StatusPartialOutage},
		"GRU1": {status: op, expired: down, until: earlier},
	})
}
