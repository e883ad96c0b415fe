package httpapi

import (
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/cdnapi/cdnapi"
)

// This file holds the JSON encoders of the API's bodies. They append into a
// caller's []byte instead of going through encoding/json: the shapes are few
// and fixed, reflection would cost more than the store query on a list page,
// and appending into a pooled buffer makes a page nearly allocation-free. The
// output is byte-for-byte what encoding/json would write for the same
// strings; encode_test.go checks that.

const hexDigits = "0123456789abcdef"

// plainASCII[c] reports whether the ASCII byte c can go into a JSON string as
// is. Like encoding/json's default, <, > and & are escaped too, so that a body
// that ends up inside an HTML page cannot close a script element.
var plainASCII = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// appendString appends s to b as a JSON string. It escapes what JSON
// requires, the HTML-sensitive <, > and &, and U+2028 and U+2029 (which
// JavaScript treats as line ends), and replaces each byte of invalid UTF-8
// with U+FFFD, exactly as encoding/json does.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if plainASCII[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default: // other control bytes, <, > and &
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendTime appends t as a JSON string in the API's one time format, the
// same text cdnapi.Timestamp returns, without allocating.
func appendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.UTC().Truncate(time.Second).AppendFormat(b, cdnapi.TimeLayout)
	return append(b, '"')
}

// appendFile appends f as an item of the files list. The project is not
// shown: it is implied by the request.
func appendFile(b []byte, f cdnapi.File) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, f.ID)
	b = append(b, `,"created_at":`...)
	b = appendTime(b, f.CreatedAt)
	b = append(b, `,"filename":`...)
	b = appendString(b, f.Filename)
	b = append(b, `,"bytes":`...)
	b = strconv.AppendInt(b, f.Bytes, 10)
	b = append(b, `,"checksum":`...)
	b = appendString(b, f.Checksum)
	return append(b, '}')
}

// appendAsset appends a as an item of the assets list.
func appendAsset(b []byte, a cdnapi.Asset) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, a.ID)
	b = append(b, `,"created_at":`...)
	b = appendTime(b, a.CreatedAt)
	b = append(b, `,"path":`...)
	b = appendString(b, a.Path)
	b = append(b, `,"bytes":`...)
	b = strconv.AppendInt(b, a.Bytes, 10)
	b = append(b, `,"cache_status":`...)
	b = appendString(b, string(a.CacheStatus))
	b = append(b, `,"region":`...)
	b = appendString(b, a.Region)
	return append(b, '}')
}

// appendRegion appends r as an item of the regions list.
func appendRegion(b []byte, r cdnapi.Region) []byte {
	b = append(b, `{"code":`...)
	b = appendString(b, r.Code)
	b = append(b, `,"name":`...)
	b = appendString(b, r.Name)
	b = append(b, `,"zone":`...)
	b = appendString(b, r.Zone)
	b = append(b, `,"country":`...)
	b = appendString(b, r.Country)
	b = append(b, `,"status":`...)
	b = appendString(b, string(r.Status))
	return append(b, '}')
}

// appendList appends the list envelope of API.md around items. nextCursor
// is "" when there is no next page; it is then written as null, so that
// next_cursor is null exactly when has_more is false.
func appendList[T any](b []byte, items []T, appendItem func([]byte, T) []byte, nextCursor string) []byte {
	b = append(b, `{"object":"list","data":[`...)
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendItem(b, it)
	}
	b = append(b, `],"has_more":`...)
	if nextCursor == "" {
		return append(b, `false,"next_cursor":null}`...)
	}
	b = append(b, `true,"next_cursor":`...)
	b = appendString(b, nextCursor)
	return append(b, '}')
}

// appendStatusDocument appends d as the body of GET /api/v1/status, its
// fields in the order of API.md.
func appendStatusDocument(b []byte, d cdnapi.StatusDocument) []byte {
	b = append(b, `{"status":`...)
	b = appendString(b, string(d.Status))
	b = append(b, `,"version":`...)
	b = appendString(b, d.Version)
	b = append(b, `,"region":`...)
	b = appendString(b, d.Region)
	b = append(b, `,"components":[`...)
	for i, c := range d.Components {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"name":`...)
		b = appendString(b, c.Name)
		b = append(b, `,"status":`...)
		b = appendString(b, string(c.Status))
		b = append(b, '}')
	}
	b = append(b, `],"updated_at":`...)
	b = appendTime(b, d.UpdatedAt)
	return append(b, '}')
}

// appendErrorBody appends the error body of API.md. param is left out when
// it is empty.
func appendErrorBody(b []byte, typ, code, message, param, requestID string) []byte {
	b = append(b, `{"error":{"type":`...)
	b = appendString(b, typ)
	b = append(b, `,"code":`...)
	b = appendString(b, code)
	b = append(b, `,"message":`...)
	b = appendString(b, message)
	if param != "" {
		b = append(b, `,"param":`...)
		b = appendString(b, param)
	}
	b = append(b, `,"request_id":`...)
	b = appendString(b, requestID)
	return append(b, `}}`...)
}
