package cdnapi

import (
	"context"
	"errors"
	"time"
)

// LogPosition is how far a follower has read an edge's access log (cdnapi
// follow): which file, and the byte offset just past the last line whose
// rows are committed. The follower commits it in the same transaction as
// those rows, so after a crash it goes on exactly where the committed rows
// end: no line is written twice and none is skipped.
//
// A file is known by its device and inode, which survive a rename (nginx's
// log rotated by mv and reopen), and by a fingerprint of its first bytes,
// which survives a copy (logrotate's copytruncate) and tells a reused inode
// from the file it once was.
type LogPosition struct {
	// Stream names the log that is followed: the absolute path of the file
	// unless the follower was given a name. One stream, one position.
	Stream string
	// Path is where the file was when the position was committed; for
	// people and for finding it again, not for identity.
	Path   string
	Device uint64
	Inode  uint64
	// Offset is the number of bytes of the file read and committed: the end
	// of the last complete line covered, never inside a line.
	Offset int64
	// Head is the hex SHA-256 of the file's first HeadBytes bytes, which a
	// copy of the file shares and another file does not.
	Head      string
	HeadBytes int64
	// Lines counts the lines committed over the stream's life, listed or
	// not, across files.
	Lines int64
	// NewestAt is the time of the newest request committed, as the log
	// tells it; zero until one is. Now minus NewestAt is the lag of an
	// edge that is busy.
	NewestAt time.Time
	// UpdatedAt is when the position was last committed.
	UpdatedAt time.Time
}

// SameFile reports whether p and q name the same file at possibly
// different offsets.
func (p LogPosition) SameFile(q LogPosition) bool {
	return p.Device == q.Device && p.Inode == q.Inode
}

// ErrPositionMoved is returned by LogPositionWriter.MoveLogPosition when the
// stored position is not the one the caller read: another follower of the
// same stream committed in between. The transaction rolls back, so nothing
// is written twice; the caller stops.
var ErrPositionMoved = errors.New("the log position was moved by another follower of the same stream")

// LogPositionWriter commits a follower's position. A Writer that the
// engines hand out in Write implements it, so that the position is
// committed in the same transaction as the rows it covers.
type LogPositionWriter interface {
	// MoveLogPosition sets the position of to.Stream to to, provided the
	// stored one is from: the same device, inode and offset, or no stored
	// position at all when from is the zero LogPosition. Otherwise it
	// returns ErrPositionMoved and writes nothing. UpdatedAt is set by the
	// store. A Write in which a move failed commits nothing, even when fn
	// returns nil: its rows cover lines another follower has committed.
	MoveLogPosition(ctx context.Context, from, to LogPosition) error
}

// LogPositionReader reads followers' positions.
type LogPositionReader interface {
	// LogPosition returns the committed position of stream, or ErrNotFound
	// when none was ever committed.
	LogPosition(ctx context.Context, stream string) (LogPosition, error)
	// LogPositions returns every stream's position, ordered by stream.
	LogPositions(ctx context.Context) ([]LogPosition, error)
	// DeleteLogPosition forgets stream's position, so that a new follower of
	// it starts at the beginning of the file; ErrNotFound when there is
	// none.
	DeleteLogPosition(ctx context.Context, stream string) error
}
