package cdnapi

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"strings"
	"time"
)

// CursorList names the list a cursor belongs to, so that a cursor of one
// list is refused by another.
type CursorList byte

// The lists that take cursors.
const (
	CursorFiles     CursorList = 1
	CursorAssets    CursorList = 2
	CursorIncidents CursorList = 3
)

// cursorVersion is the first byte of every cursor. A change of layout gets a
// new version, and cursors of the old one are refused as invalid.
const cursorVersion = 1

// MinCursorSecret is the shortest key a CursorCodec accepts.
const MinCursorSecret = 16

// CursorSecretSize is the length of the keys NewCursorSecret makes: 256
// bits, the strength of HMAC-SHA256 itself.
const CursorSecretSize = 32

// NewCursorSecret returns a random key of CursorSecretSize bytes, for a
// store to keep and every process to sign cursors with.
func NewCursorSecret() []byte {
	secret := make([]byte, CursorSecretSize)
	rand.Read(secret) // never fails; it crashes the program rather than return weak bytes
	return secret
}

// cursorEncoding is strict so that every cursor has exactly one spelling:
// changing any character, even one whose bits the decoder would otherwise
// drop, yields a cursor that is refused.
var cursorEncoding = base64.RawURLEncoding.Strict()

// CursorCodec encodes and checks the opaque pagination cursors of the lists.
//
// A cursor is URL-safe base64, without padding, of
//
//	version | list | uvarint len(filter) | filter | varint unix seconds | uvarint len(id) | id | HMAC-SHA256
//
// where the HMAC covers every byte before it. The filter binds the cursor to
// the query it came from: the project for files, the region (or "") for
// assets. Cursors do not expire.
type CursorCodec struct {
	key []byte
}

// NewCursorCodec returns a codec that signs with key, which must be at least
// MinCursorSecret bytes long.
func NewCursorCodec(key []byte) (*CursorCodec, error) {
	if len(key) < MinCursorSecret {
		return nil, errors.New("cdnapi: cursor secret must be at least 16 bytes")
	}
	return &CursorCodec{key: append([]byte(nil), key...)}, nil
}

// Encode returns the cursor that continues list, under filter, after p.
func (c *CursorCodec) Encode(list CursorList, filter string, p Position) string {
	b := make([]byte, 0, 2+2*binary.MaxVarintLen64+len(filter)+len(p.ID)+sha256.Size)
	b = append(b, cursorVersion, byte(list))
	b = binary.AppendUvarint(b, uint64(len(filter)))
	b = append(b, filter...)
	b = binary.AppendVarint(b, p.CreatedAt.Unix())
	b = binary.AppendUvarint(b, uint64(len(p.ID)))
	b = append(b, p.ID...)
	b = append(b, c.mac(b)...)
	return cursorEncoding.EncodeToString(b)
}

// Decode checks that s is a cursor this codec issued for list and filter,
// and returns its position. Any failure is an *Error with CodeCursorInvalid
// that tells the client what to do; why it failed is not revealed.
func (c *CursorCodec) Decode(list CursorList, filter, s string) (Position, error) {
	invalid := Errorf(CodeCursorInvalid, "cursor",
		"cursor is not valid for this list; use the next_cursor of a previous response to the same request")
	// The decoder skips line breaks; a cursor has none, so that it has one
	// spelling only.
	if strings.ContainsAny(s, "\r\n") {
		return Position{}, invalid
	}
	raw, err := cursorEncoding.DecodeString(s)
	if err != nil || len(raw) < 2+sha256.Size {
		return Position{}, invalid
	}
	body, mac := raw[:len(raw)-sha256.Size], raw[len(raw)-sha256.Size:]
	if !hmac.Equal(mac, c.mac(body)) {
		return Position{}, invalid
	}
	// The MAC is good, so the bytes are ours; the checks below only refuse
	// cursors of another version, list or filter.
	if body[0] != cursorVersion || CursorList(body[1]) != list {
		return Position{}, invalid
	}
	r := body[2:]
	f, r, ok := readBytes(r)
	if !ok || string(f) != filter {
		return Position{}, invalid
	}
	secs, n := binary.Varint(r)
	if n <= 0 {
		return Position{}, invalid
	}
	id, r, ok := readBytes(r[n:])
	if !ok || len(r) != 0 {
		return Position{}, invalid
	}
	return Position{CreatedAt: time.Unix(secs, 0).UTC(), ID: string(id)}, nil
}

// ListCursors are the cursors of one list under one filter: what a
// request's cursor is decoded with and its next_cursor encoded with, so the
// two always agree.
type ListCursors struct {
	codec  *CursorCodec
	list   CursorList
	filter string
}

// Files returns the cursors of a project's files.
func (c *CursorCodec) Files(project string) ListCursors {
	return ListCursors{c, CursorFiles, project}
}

// Assets returns the cursors of the assets of region, or of every region
// when region is "".
func (c *CursorCodec) Assets(region string) ListCursors {
	return ListCursors{c, CursorAssets, region}
}

// Incidents returns the cursors of the incident list.
func (c *CursorCodec) Incidents() ListCursors {
	return ListCursors{c, CursorIncidents, ""}
}

// Encode returns the cursor that continues the list after p.
func (l ListCursors) Encode(p Position) string { return l.codec.Encode(l.list, l.filter, p) }

// Decode checks s as CursorCodec.Decode does and returns its position.
func (l ListCursors) Decode(s string) (Position, error) { return l.codec.Decode(l.list, l.filter, s) }

// mac returns the HMAC-SHA256 of b under the codec's key.
func (c *CursorCodec) mac(b []byte) []byte {
	m := hmac.New(sha256.New, c.key)
	m.Write(b)
	return m.Sum(nil)
}

// readBytes reads a uvarint length and that many bytes.
func readBytes(b []byte) (v, rest []byte, ok bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return nil, nil, false
	}
	b = b[k:]
	return b[:n], b[n:], true
}
