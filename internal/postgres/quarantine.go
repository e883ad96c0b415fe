package postgres

import (
	"context"
	"fmt"

	"github.com/cdnapi/cdnapi"
)

var _ cdnapi.QuarantineRecorder = (*Store)(nil)

// RecordQuarantine writes the file.quarantined event id, unless an event
// of that id exists, on the primary. The events_queued trigger queues it
// for the webhooks that want it; a row that ON CONFLICT skips fires no
// trigger, so a retry queues nothing. Its at is the server's clock, as the
// triggers' is; q.At is kept, in whole seconds, as quarantined_at.
func (s *Store) RecordQuarantine(ctx context.Context, id string, q cdnapi.Quarantine) error {
	if err := cdnapi.CheckQuarantine(id, q); err != nil {
		return fmt.Errorf("postgres: record quarantine: %w", err)
	}
	_, err := s.primary.Exec(ctx, `INSERT INTO events
		(id, type, at, subject, path, bytes, checksum, signature, quarantined_at)
		VALUES ($1, $2, date_trunc('second', clock_timestamp()), $3, $4, $5, $6, $7, $8)
		ON CONFLICT (id) DO NOTHING`,
		id, string(cdnapi.EventFileQuarantined), q.Project, q.Path, q.Bytes, q.Checksum, q.Signature, wholeSecondUTC(q.At))
	if err != nil {
		return fmt.Errorf("postgres: record quarantine: %w", err)
	}
	return nil
}
