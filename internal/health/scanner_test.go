package health

import (
	"errors"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/clamd"
	"github.com/cdnapi/cdnapi/internal/clamdtest"
)

// TestScannerProbe measures a real clamd: answering with fresh signatures
// is operational; signatures older than the limit, or of no stated age,
// and an upload waiting too long are degraded_performance; stopped, an
// outage.
func TestScannerProbe(t *testing.T) {
	now := time.Now()
	probe := func(t *testing.T, o clamdtest.Options, backlog func() (time.Time, error)) (error, *clamdtest.Server) {
		t.Helper()
		s := clamdtest.Start(t, o)
		c, err := clamd.New(s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		p := ScannerProbe(ScannerConfig{Scanner: c, MaxSignatureAge: 3 * 24 * time.Hour, Backlog: backlog, MaxScanWait: time.Minute})
		return p(t.Context()), s
	}
	noBacklog := func() (time.Time, error) { return time.Time{}, nil }

	t.Run("fresh", func(t *testing.T) {
		err, s := probe(t, clamdtest.Options{SignaturesBuilt: now.Add(-time.Hour)}, noBacklog)
		if err != nil {
			t.Fatalf("fresh signatures, no backlog: %v", err)
		}
		s.Stop(t)
		c, _ := clamd.New(s.Addr())
		err = ScannerProbe(ScannerConfig{Scanner: c})(t.Context())
		if err == nil || errors.Is(err, cdnapi.ErrDegraded) {
			t.Errorf("clamd stopped: %v, want an outage", err)
		}
	})
	t.Run("old signatures", func(t *testing.T) {
		err, _ := probe(t, clamdtest.Options{SignaturesBuilt: now.Add(-10 * 24 * time.Hour)}, noBacklog)
		if !errors.Is(err, cdnapi.ErrDegraded) {
			t.Errorf("signatures of 10 days: %v, want degraded", err)
		}
	})
	t.Run("undated signatures", func(t *testing.T) {
		err, _ := probe(t, clamdtest.Options{Undated: true}, noBacklog)
		if !errors.Is(err, cdnapi.ErrDegraded) {
			t.Errorf("signatures of no stated age: %v, want degraded", err)
		}
	})
	t.Run("backlog", func(t *testing.T) {
		err, _ := probe(t, clamdtest.Options{}, func() (time.Time, error) { return now.Add(-2 * time.Minute), nil })
		if !errors.Is(err, cdnapi.ErrDegraded) {
			t.Errorf("an upload waiting 2m: %v, want degraded", err)
		}
	})
}
