package cdnapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"
	"unicode/utf8"
)

// Quarantine is an upload the virus scanner found infected and moved aside:
// what a file.quarantined event tells of.
type Quarantine struct {
	Project   string
	Path      string // the upload's path within the project, as the scanner saw it
	Bytes     int64
	Checksum  string // "sha256:" followed by 64 lower-case hex characters, as File's
	Signature string // the scanner's name for what it found, e.g. "Eicar-Test-Signature"
	At        time.Time
}

// The longest Path and Signature a Quarantine may hold, in bytes.
const (
	MaxQuarantinePath      = 4096
	MaxQuarantineSignature = 256
)

// Validate reports the first reason q cannot be recorded: Project must be
// ValidProject, Path and Signature non-empty UTF-8 without control
// characters and within their limits, Bytes not negative, Checksum
// "sha256:" and 64 lower-case hex digits, and At set.
func (q Quarantine) Validate() error {
	switch {
	case !ValidProject(q.Project):
		return errors.New("quarantine: project: want " + ProjectRule)
	case q.Path == "" || len(q.Path) > MaxQuarantinePath || !plainText(q.Path):
		return errors.New("quarantine: path: want 1 to 4096 bytes of UTF-8 without control characters")
	case q.Bytes < 0:
		return errors.New("quarantine: bytes: want 0 or more")
	case !ValidChecksum(q.Checksum):
		return errors.New(`quarantine: checksum: want "sha256:" and 64 lower-case hex characters`)
	case q.Signature == "" || len(q.Signature) > MaxQuarantineSignature || !plainText(q.Signature):
		return errors.New("quarantine: signature: want 1 to 256 bytes of UTF-8 without control characters")
	case q.At.IsZero():
		return errors.New("quarantine: at: want the time of the quarantine")
	}
	return nil
}

// ValidChecksum reports whether s is "sha256:" and 64 lower-case hex
// characters, the shape of File.Checksum.
func ValidChecksum(s string) bool {
	const prefix = "sha256:"
	return len(s) == len(prefix)+64 && s[:len(prefix)] == prefix && lowerHex(s[len(prefix):])
}

// plainText reports whether s is valid UTF-8 without control characters
// (C0, DEL and C1), which could rewrite a terminal or a log that shows it.
func plainText(s string) bool {
	for _, r := range s {
		if r < 0x20 || r >= 0x7f && r < 0xa0 {
			return false
		}
	}
	return utf8.ValidString(s)
}

// QuarantineEventID returns the ID of the file.quarantined event of an
// upload: EventIDPrefix and the first 32 hex digits of the SHA-256 of the
// three fields, each ended by a NUL byte (none of them may hold one). It
// depends on the upload alone, so a scanner that crashed after recording
// and retries records the same event, which RecordQuarantine then keeps
// once.
func QuarantineEventID(project, path, checksum string) string {
	h := sha256.New()
	for _, s := range []string{project, path, checksum} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return EventIDPrefix + hex.EncodeToString(h.Sum(nil)[:16])
}

// QuarantineRecorder records file.quarantined events. Both engines
// implement it; internal/storetest holds the behaviour it must have.
type QuarantineRecorder interface {
	// RecordQuarantine writes the file.quarantined event id of q, queued
	// at once for every webhook subscribed to file.quarantined, as the
	// triggers queue the other events. It refuses an invalid q and an id
	// that is not ValidEventID. It is idempotent on id: when an event of
	// that id exists already it writes nothing, queues nothing and returns
	// nil, so a retry after a crash delivers the event once. Pass
	// QuarantineEventID(q.Project, q.Path, q.Checksum).
	RecordQuarantine(ctx context.Context, id string, q Quarantine) error
}

// CheckQuarantine is what RecordQuarantine checks before it writes: id's
// shape and q's fields.
func CheckQuarantine(id string, q Quarantine) error {
	if !ValidEventID(id) {
		return errors.New("quarantine: id: want " + EventIDPrefix + " and 32 lower-case hex digits")
	}
	return q.Validate()
}
