package storemetrics

import (
	"context"

	"github.com/cdnapi/cdnapi"
)

// The log followers' positions, measured like the rest. Their moves go
// through a Write's Writer, and are measured as part of that write.

func (s *measured) LogPosition(ctx context.Context, stream string) (cdnapi.LogPosition, error) {
	return measure(s, opLogPosition, func() (cdnapi.LogPosition, error) { return s.inner.LogPosition(ctx, stream) })
}

func (s *measured) LogPositions(ctx context.Context) ([]cdnapi.LogPosition, error) {
	return measure(s, opLogPositions, func() ([]cdnapi.LogPosition, error) { return s.inner.LogPositions(ctx) })
}

func (s *measured) DeleteLogPosition(ctx context.Context, stream string) error {
	return s.run(opDeleteLogPosition, func() error { return s.inner.DeleteLogPosition(ctx, stream) })
}
