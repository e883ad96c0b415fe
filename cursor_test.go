package cdnapi_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
)

func newCodec(t testing.TB, key string) *cdnapi.CursorCodec {
	t.Helper()
	c, err := cdnapi.NewCursorCodec([]byte(key))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCursorRoundTrip(t *testing.T) {
	c := newCodec(t, "0123456789abcdef0123456789abcdef")
	tests := []struct {
		name   string
		list   cdnapi.CursorList
		filter string
		pos    cdnapi.Position
	}{
		{"files", cdnapi.CursorFiles, "default", cdnapi.Position{CreatedAt: time.Date(2026, 11, 20, 14, 3, 7, 0, time.UTC), ID: "fil_abc"}},
		{"assets all regions", cdnapi.CursorAssets, "", cdnapi.Position{CreatedAt: time.Unix(1, 0).UTC(), ID: "ast_Z"}},
		{"assets one region", cdnapi.CursorAssets, "FRA1", cdnapi.Position{CreatedAt: time.Unix(1<<40, 0).UTC(), ID: "ast_" + strings.Repeat("x", 64)}},
		{"before 1970", cdnapi.CursorFiles, "ünïcode project", cdnapi.Position{CreatedAt: time.Unix(-86400, 0).UTC(), ID: "fil_1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := c.Encode(tt.list, tt.filter, tt.pos)
			if strings.ContainsAny(s, "+/=") {
				t.Errorf("cursor %q is not URL-safe unpadded base64", s)
			}
			got, err := c.Decode(tt.list, tt.filter, s)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !got.CreatedAt.Equal(tt.pos.CreatedAt) || got.ID != tt.pos.ID {
				t.Errorf("Decode = %+v, want %+v", got, tt.pos)
			}
		})
	}
}

func TestCursorRefused(t *testing.T) {
	c := newCodec(t, "0123456789abcdef0123456789abcdef")
	pos := cdnapi.Position{CreatedAt: time.Date(2026, 11, 20, 14, 3, 7, 0, time.UTC), ID: "fil_abc"}
	valid := c.Encode(cdnapi.CursorFiles, "default", pos)
	other := newCodec(t, "another secret, also long enough")

	tests := []struct {
		name   string
		codec  *cdnapi.CursorCodec
		list   cdnapi.CursorList
		filter string
		cursor string
	}{
		{"empty", c, cdnapi.CursorFiles, "default", ""},
		{"not base64", c, cdnapi.CursorFiles, "default", "!!!!"},
		{"padded", c, cdnapi.CursorFiles, "default", valid + "="},
		{"truncated", c, cdnapi.CursorFiles, "default", valid[:len(valid)-4]},
		{"extended", c, cdnapi.CursorFiles, "default", valid + "AA"},
		{"line break", c, cdnapi.CursorFiles, "default", valid[:10] + "\n" + valid[10:]},
		{"carriage return", c, cdnapi.CursorFiles, "default", valid[:10] + "\r" + valid[10:]},
		{"other list", c, cdnapi.CursorAssets, "default", valid},
		{"other filter", c, cdnapi.CursorFiles, "other", valid},
		{"other key", other, cdnapi.CursorFiles, "default", valid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.codec.Decode(tt.list, tt.filter, tt.cursor)
			if code := cdnapi.ErrorCode(err); code != cdnapi.CodeCursorInvalid {
				t.Errorf("Decode error code = %q (err %v), want %q", code, err, cdnapi.CodeCursorInvalid)
			}
		})
	}
}

// TestCursorEveryByteChanged changes each character of a valid cursor in
// turn, to every other character of the alphabet, and expects a refusal
// every time: strict decoding leaves no character whose bits are ignored.
func TestCursorEveryByteChanged(t *testing.T) {
	c := newCodec(t, "0123456789abcdef0123456789abcdef")
	valid := c.Encode(cdnapi.CursorAssets, "FRA1", cdnapi.Position{CreatedAt: time.Unix(1790000000, 0), ID: "ast_q"})
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	for i := range len(valid) {
		for _, r := range alphabet {
			if byte(r) == valid[i] {
				continue
			}
			mutated := valid[:i] + string(r) + valid[i+1:]
			if _, err := c.Decode(cdnapi.CursorAssets, "FRA1", mutated); err == nil {
				t.Fatalf("cursor with position %d changed to %q was accepted", i, r)
			}
		}
	}
}

func TestNewCursorCodecShortKey(t *testing.T) {
	if _, err := cdnapi.NewCursorCodec([]byte("short")); err == nil {
		t.Fatal("NewCursorCodec accepted a 5-byte key")
	}
}

func FuzzCursorDecode(f *testing.F) {
	c := newCodec(f, "0123456789abcdef0123456789abcdef")
	f.Add(c.Encode(cdnapi.CursorFiles, "default", cdnapi.Position{CreatedAt: time.Unix(1790000000, 0), ID: "fil_1"}))
	f.Add("")
	f.Add("AQ")
	f.Fuzz(func(t *testing.T, s string) {
		pos, err := c.Decode(cdnapi.CursorFiles, "default", s)
		if err != nil {
			var e *cdnapi.Error
			if !errors.As(err, &e) || e.Code != cdnapi.CodeCursorInvalid {
				t.Fatalf("Decode(%q) error %v is not cursor_invalid", s, err)
			}
			return
		}
		// Whatever decodes must encode back to the same cursor: there is one
		// spelling per position.
		if again := c.Encode(cdnapi.CursorFiles, "default", pos); again != s {
			t.Fatalf("Decode(%q) = %+v, which encodes to %q", s, pos, again)
		}
	})
}

// TestListCursors checks that each list's cursors decode what they encode
// and refuse those of another list or filter.
func TestListCursors(t *testing.T) {
	c := newCodec(t, "0123456789abcdef")
	pos := cdnapi.Position{CreatedAt: time.Unix(1790000000, 0).UTC(), ID: "x_1"}
	lists := []struct {
		name string
		l    cdnapi.ListCursors
		raw  string // the same cursor through the codec
	}{
		{"files of default", c.Files("default"), c.Encode(cdnapi.CursorFiles, "default", pos)},
		{"files of other", c.Files("other"), c.Encode(cdnapi.CursorFiles, "other", pos)},
		{"assets of all regions", c.Assets(""), c.Encode(cdnapi.CursorAssets, "", pos)},
		{"assets of FRA1", c.Assets("FRA1"), c.Encode(cdnapi.CursorAssets, "FRA1", pos)},
		{"incidents", c.Incidents(), c.Encode(cdnapi.CursorIncidents, "", pos)},
	}
	for i, a := range lists {
		s := a.l.Encode(pos)
		if s != a.raw {
			t.Errorf("%s: Encode = %q, want the codec's %q", a.name, s, a.raw)
		}
		for j, b := range lists {
			got, err := b.l.Decode(s)
			if i == j && (err != nil || got != pos) {
				t.Errorf("%s: Decode of its own cursor = %v, %v", a.name, got, err)
			}
			if i != j && cdnapi.ErrorCode(err) != cdnapi.CodeCursorInvalid {
				t.Errorf("%s: a cursor of %s decoded: %v, %v", b.name, a.name, got, err)
			}
		}
	}
}

// NewCursorSecret makes keys a CursorCodec takes, and never the same one
// twice.
func TestNewCursorSecret(t *testing.T) {
	a, b := cdnapi.NewCursorSecret(), cdnapi.NewCursorSecret()
	if len(a) != cdnapi.CursorSecretSize || len(b) != cdnapi.CursorSecretSize {
		t.Fatalf("secrets of %d and %d bytes, want %d", len(a), len(b), cdnapi.CursorSecretSize)
	}
	if bytes.Equal(a, b) {
		t.Error("two secrets are the same")
	}
	if _, err := cdnapi.NewCursorCodec(a); err != nil {
		t.Errorf("NewCursorCodec(NewCursorSecret()): %v", err)
	}
}
