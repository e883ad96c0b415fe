package sqlite

import (
	"context"
	"fmt"

	"github.com/cdnapi/cdnapi"
)

var _ cdnapi.QuarantineRecorder = (*Store)(nil)

// RecordQuarantine writes the file.quarantined event id, unless an event
// of that id exists. The events_queued trigger queues it for the webhooks
// that want it, in the same statement; a row that ON CONFLICT skips fires
// no trigger, so a retry queues nothing. Its at is SQLite's clock, as the
// triggers' is; q.At is kept, in whole seconds, as quarantined_at.
func (s *Store) RecordQuarantine(ctx context.Context, id string, q cdnapi.Quarantine) error {
	if err := cdnapi.CheckQuarantine(id, q); err != nil {
		return fmt.Errorf("sqlite: record quarantine: %w", err)
	}
	_, err := s.write.ExecContext(ctx, `INSERT INTO events
		(id, type, at, subject, path, bytes, checksum, signature, quarantined_at)
		VALUES (?, ?, unixepoch(), ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
		id, string(cdnapi.EventFileQuarantined), q.Project, q.Path, q.Bytes, q.Checksum, q.Signature, q.At.Unix())
	if err != nil {
		return fmt.Errorf("sqlite: record quarantine: %w", err)
	}
	return nil
}
