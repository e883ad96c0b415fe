package health

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
)

// TestJudge: how a probe's outcome and duration become a status. A store
// that answers but says it is degraded (a read replica down, reads on the
// primary alone) is degraded_performance, not an outage.
func TestJudge(t *testing.T) {
	e := &Evaluator{cfg: Config{SlowThreshold: 250 * time.Millisecond}}
	degraded := fmt.Errorf("postgres: ping: %w: the read replica does not answer", cdnapi.ErrDegraded)
	tests := []struct {
		took time.Duration
		err  error
		want cdnapi.Status
	}{
		{10 * time.Millisecond, nil, cdnapi.StatusOperational},
		{300 * time.Millisecond, nil, cdnapi.StatusDegradedPerformance},
		{10 * time.Millisecond, degraded, cdnapi.StatusDegradedPerformance},
		{10 * time.Millisecond, errors.New("connection refused"), cdnapi.StatusMajorOutage},
		{time.Second, errTimeout, cdnapi.StatusMajorOutage},
	}
	for _, tt := range tests {
		if got := e.judge(tt.took, tt.err).status; got != tt.want {
			t.Errorf("judge(%v, %v) = %s, want %s", tt.took, tt.err, got, tt.want)
		}
	}
}
