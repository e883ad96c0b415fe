package storemetrics

import (
	"context"

	"github.com/cdnapi/cdnapi"
)

// FileStamps is measured as one call, fn's time included: the caller's work
// on each row is part of reading them.
func (s *measured) FileStamps(ctx context.Context, project string, fn func(cdnapi.FileStamp) error) error {
	return s.run(opFileStamps, func() error { return s.inner.FileStamps(ctx, project, fn) })
}
