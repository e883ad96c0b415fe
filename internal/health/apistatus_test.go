package health

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/teststore"
)

// TestAPIStatusHook checks that Config.APIStatus shows in the API
// component at each round, and that draining still wins.
func TestAPIStatusHook(t *testing.T) {
	var dep atomic.Value
	dep.Store(cdnapi.StatusOperational)
	up := func(context.Context) error { return nil }
	e := New(teststore.SQLite(t), Config{Now: fixedClock, Upload: up, VirusScanning: up,
		APIStatus: func() cdnapi.Status { return dep.Load().(cdnapi.Status) }})
	for _, step := range []struct {
		dep, want cdnapi.Status
	}{
		{cdnapi.StatusOperational, cdnapi.StatusOperational},
		{cdnapi.StatusDegradedPerformance, cdnapi.StatusDegradedPerformance},
		{cdnapi.StatusOperational, cdnapi.StatusOperational},
	} {
		dep.Store(step.dep)
		doc := e.Evaluate(context.Background())
		if s := statusOf(doc, cdnapi.ComponentAPI); s != step.want || doc.Status != step.want {
			t.Errorf("dependency %s: API %s, overall %s; want %s", step.dep, s, doc.Status, step.want)
		}
	}
	dep.Store(cdnapi.StatusDegradedPerformance)
	e.SetDraining()
	if s := statusOf(e.Document(), cdnapi.ComponentAPI); s != cdnapi.StatusUnderMaintenance {
		t.Errorf("draining with a degraded dependency: API %s, want under_maintenance", s)
	}
}
