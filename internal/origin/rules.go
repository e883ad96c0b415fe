package origin

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cdnapi/cdnapi"
)

// ID returns the ID of the file at path rel (relative to the origin, with
// "/" between names) of project: "fil_" and the first 128 bits of the
// SHA-256 of project, a NUL and rel, in hex. The same file of the same
// project always has the same ID, whichever machine or run indexes it, so a
// run after a crash or on a copy of the database writes nothing new; and
// one path in two projects makes two files, since a File's ID is unique
// across projects.
func ID(project, rel string) string {
	// One Sum256 over a stack buffer when the name is short, as most are.
	var buf [512]byte
	return keyOfFile(append(append(append(buf[:0], project...), 0), rel...)).id()
}

// idKey is an ID of the form ID gives, as the 128 bits it shows in hex: the
// key of a Syncer's state, which a re-run looks up for every file, hashed
// and compared in a few instructions, and computed without allocating.
type idKey [16]byte

// idLen is the length of an ID of the form ID gives.
const idLen = len(cdnapi.FileIDPrefix) + 32

// keyOfFile returns the key of the file whose project, NUL and path are in.
func keyOfFile(in []byte) idKey {
	sum := sha256.Sum256(in)
	return idKey(sum[:16])
}

// id returns the ID whose key is k.
func (k idKey) id() string {
	var id [idLen]byte
	copy(id[:], cdnapi.FileIDPrefix)
	hex.Encode(id[len(cdnapi.FileIDPrefix):], k[:])
	return string(id[:])
}

// keyOf returns the key of id, if id has the form ID gives ("fil_" and 32
// lowercase hex digits); a file ingested otherwise may have any other.
func keyOf(id string) (k idKey, ok bool) {
	if len(id) != idLen || !strings.HasPrefix(id, cdnapi.FileIDPrefix) {
		return k, false
	}
	digits := id[len(cdnapi.FileIDPrefix):]
	for i := range k {
		hi, ok1 := hexDigit(digits[2*i])
		lo, ok2 := hexDigit(digits[2*i+1])
		if !ok1 || !ok2 {
			return k, false
		}
		k[i] = hi<<4 | lo
	}
	return k, true
}

// hexDigit is the value of a lowercase hex digit, as hex.Encode writes them.
func hexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// skip is why an entry of the tree is not a file of the list.
type skip int

const (
	keep    skip = iota
	hidden       // its name starts with "."
	badName      // its name is not valid UTF-8, or holds a control character
	symlink      // a symbolic link, to a file or a folder
	special      // a device, named pipe or socket
)

// classify says whether the entry name, of type typ, under a folder that
// is kept, is kept too. Folders are kept or skipped by the same rules as
// files, with all they hold.
func classify(name string, typ fs.FileMode) skip {
	switch {
	case strings.HasPrefix(name, "."):
		// Dot files and folders are not content: .git, .well-known
		// aside, they are what uploaders write before they rename into
		// place (rsync's .name.XXXXXX) and what editors leave behind.
		return hidden
	case !validName(name):
		// The list is JSON, which carries UTF-8 text: such a name could
		// only be shown changed, under a name nginx does not serve.
		return badName
	case typ&fs.ModeSymlink != 0:
		// Not followed: a link may leave the origin, loop, or list one
		// file twice under two names.
		return symlink
	case typ.IsDir(), typ.IsRegular():
		return keep
	}
	return special
}

// CheckName says why a file or folder named name would not be in the files
// list (see classify), or returns nil when it would be: what an upload may
// be called.
func CheckName(name string) error {
	switch classify(name, 0) {
	case hidden:
		return errors.New("a name may not start with \".\": hidden names are left out of the files list")
	case badName:
		return errors.New("a name must be UTF-8 text without control characters")
	}
	return nil
}

// validName reports whether name is valid UTF-8 without control characters,
// as the API's filenames are (see internal/ingest's validText).
func validName(name string) bool {
	if !utf8.ValidString(name) {
		return false
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f || 0x80 <= r && r <= 0x9f {
			return false
		}
	}
	return true
}

// maxUnix is the last second the API can show (9999-12-31T23:59:59Z).
var maxUnix = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC).Unix()

// createdAt is a file's created_at: its modification time in whole seconds,
// within the range the API shows.
func createdAt(sec int64) time.Time {
	return time.Unix(min(max(sec, 0), maxUnix), 0).UTC()
}

// Settle is how long a file must go unmodified before it is indexed: a file
// still being written is not listed half-written. It is also what makes
// whole-second modification times a safe test of change. A file hashed at
// least a second after its last change has its time in an earlier second
// than any later change can have, so the next run, which compares size and
// time only, cannot miss that change.
const Settle = time.Second

// futureSlack is how far in the future a modification time must be to be
// taken as set by hand (touch -d, an archive's times) rather than as a write
// under way: such a file is indexed as it is, without waiting for its time.
const futureSlack = time.Minute

// settled reports whether a file last modified at mtime may be indexed at
// now, and if not, how long to wait before looking again.
func settled(mtime, now time.Time) (bool, time.Duration) {
	age := now.Sub(mtime)
	if age >= Settle || age < -futureSlack {
		return true, 0
	}
	return false, Settle - age
}
