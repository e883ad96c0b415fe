package ingest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A line is decoded in two steps. json.Valid proves it is JSON, then a small
// scanner walks the members of the one flat object it must hold. The
// scanner is exact where encoding/json's struct decoding is lenient: field
// names match case-sensitively, a field given twice is an error rather than
// "last wins", and nothing is converted behind the caller's back. It also
// allocates nothing but the strings a record keeps, which keeps the reading
// goroutine well ahead of the store.

// valueKind is the JSON type of a member's value.
type valueKind uint8

const (
	kindString valueKind = iota + 1
	kindNumber
	kindOther // true, false, null, an object or an array
)

// rawValue is a member's value as it appears in the line.
type rawValue struct {
	kind    valueKind
	raw     []byte // the whole token, quotes included for strings
	escaped bool   // a string that holds a backslash escape
}

// schema is the fields of one kind of record, in the order of the API
// output, which is also the order in which their faults are reported.
type schema struct {
	noun     string   // "file", "asset", "region"
	fields   []string // the JSON names
	optional uint64   // bit i set: fields[i] may be missing
	// extra: members that are not fields are ignored rather than refused,
	// for lines whose producer adds its own (an nginx log_format that also
	// carries the client address for another tool). A field given twice
	// is still an error.
	extra bool
	want  []string // what each field must hold
	// notJSON, when set, may explain a line that is not JSON better than
	// a syntax error: a line of another known format. nil: not that.
	notJSON func(line []byte) error
}

// decodeLine checks that line is one JSON object whose members are fields
// of s, each at most once, and every required one present. It fills vals,
// which has a slot per field, and returns a *FieldError at the first fault.
func (s *schema) decodeLine(line []byte, vals []rawValue) error {
	if blank(line) {
		return &FieldError{Problem: "empty line", Want: "one JSON object per line"}
	}
	if !utf8.Valid(line) {
		return &FieldError{Problem: "invalid UTF-8", Want: "UTF-8 text"}
	}
	if bytes.HasPrefix(line, byteOrderMark) {
		return &FieldError{Problem: "a byte-order mark (U+FEFF) starts the line",
			Want: "no byte-order mark, or only one at the start of the input"}
	}
	if !json.Valid(line) {
		if s.notJSON != nil {
			if err := s.notJSON(line); err != nil {
				return err
			}
		}
		return syntaxError(line)
	}
	clear(vals)
	p := skipSpace(line, 0)
	if line[p] != '{' {
		return &FieldError{Want: "a JSON object, not " + describe(line[p])}
	}
	var seen uint64
	p = skipSpace(line, p+1)
	for line[p] != '}' {
		end := stringEnd(line, p)
		key := line[p:end]
		p = skipSpace(line, end)
		p = skipSpace(line, p+1) // the colon
		v, next := scanValue(line, p)
		i := s.index(key)
		if i < 0 && s.extra {
			p = skipSpace(line, next)
			if line[p] == ',' {
				p = skipSpace(line, p+1)
			}
			continue
		}
		if i < 0 {
			return &FieldError{Field: quoteField(key), Problem: "unknown field",
				Want: "only the fields of " + article(s.noun) + ": " + strings.Join(s.fields, ", ")}
		}
		if seen&(1<<i) != 0 {
			return &FieldError{Field: s.fields[i], Problem: "given twice", Want: "each field once"}
		}
		seen |= 1 << i
		vals[i] = v
		p = skipSpace(line, next)
		if line[p] == ',' {
			p = skipSpace(line, p+1)
		}
	}
	for i, name := range s.fields {
		if seen&(1<<i) == 0 && s.optional&(1<<i) == 0 {
			return &FieldError{Field: name, Problem: "missing", Want: s.want[i]}
		}
	}
	return nil
}

// blank reports whether line holds nothing but JSON whitespace.
func blank(line []byte) bool {
	for _, c := range line {
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return false
		}
	}
	return true
}

// index returns the position of the field named by the raw JSON string key,
// or -1. Keys hardly ever hold escapes, so they are compared raw and only
// unescaped when they do.
func (s *schema) index(key []byte) int {
	name := key[1 : len(key)-1]
	if bytes.IndexByte(name, '\\') >= 0 {
		var u string
		if json.Unmarshal(key, &u) != nil {
			return -1
		}
		name = []byte(u)
	}
	for i, f := range s.fields {
		if string(name) == f {
			return i
		}
	}
	return -1
}

// syntaxError explains why line is not one JSON value. It runs only for bad
// lines, so it may be slow.
func syntaxError(line []byte) error {
	d := json.NewDecoder(bytes.NewReader(line))
	var v json.RawMessage
	if err := d.Decode(&v); err == nil {
		return &FieldError{Problem: "text after the JSON object", Want: "one JSON object per line"}
	} else if se, ok := err.(*json.SyntaxError); ok && se.Offset > 0 && int(se.Offset) <= len(line) {
		return &FieldError{Problem: "malformed JSON at byte " + fmt.Sprint(se.Offset) + " (" + unexpected(line[se.Offset-1:], se.Error()) + ")",
			Want: "one JSON object per line"}
	}
	return &FieldError{Problem: "malformed JSON (unexpected end of line)", Want: "one JSON object per line"}
}

// unexpected says which character at the start of rest encoding/json
// stopped at, and where, from its message msg ("invalid character 'x'
// after object key"). encoding/json names a byte, not a character, so the
// first byte of "é" shows as 'Ã'; here the character is decoded from the
// line, which is valid UTF-8, and a byte-order mark is named as one.
func unexpected(rest []byte, msg string) string {
	r, _ := utf8.DecodeRune(rest)
	what := "character " + strconv.QuoteRune(r)
	if r == '\ufeff' {
		what = "byte-order mark (U+FEFF)"
	}
	where := ""
	if i := strings.LastIndex(msg, "' "); strings.HasPrefix(msg, "invalid character ") && i >= 0 {
		where = " " + msg[i+2:] // "after object key", "in string literal", …
	}
	return "unexpected " + what + where
}

// describe names the JSON type that starts with c, for messages.
func describe(c byte) string {
	switch c {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

func article(noun string) string {
	if strings.ContainsRune("aeiou", rune(noun[0])) {
		return "an " + noun
	}
	return "a " + noun
}

// quoteField returns an unknown field's name for a message: quoted, so that
// no control character reaches the terminal, and cut short if it is long.
func quoteField(key []byte) string {
	var name string
	if json.Unmarshal(key, &name) != nil {
		name = string(key)
	}
	if len(name) > 40 {
		name = strings.ToValidUTF8(name[:40], "") + "…"
	}
	return fmt.Sprintf("%q", name)
}

// The scanning functions below may assume that line is valid JSON: the
// caller has checked it with json.Valid. They still never index past the
// end, so a bug here cannot become a panic on odd input.

func skipSpace(b []byte, p int) int {
	for p < len(b) && (b[p] == ' ' || b[p] == '\t' || b[p] == '\r' || b[p] == '\n') {
		p++
	}
	if p >= len(b) {
		return len(b) - 1 // only reached on invalid JSON; stay in bounds
	}
	return p
}

// stringEnd returns the index just past the string that starts at b[p].
func stringEnd(b []byte, p int) int {
	for i := p + 1; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// scanValue returns the value that starts at b[p] and the index just past it.
func scanValue(b []byte, p int) (rawValue, int) {
	switch c := b[p]; {
	case c == '"':
		end := stringEnd(b, p)
		raw := b[p:end]
		return rawValue{kind: kindString, raw: raw, escaped: bytes.IndexByte(raw, '\\') >= 0}, end
	case c == '-' || '0' <= c && c <= '9':
		end := p
		for end < len(b) && bytes.IndexByte([]byte("+-.0123456789eE"), b[end]) >= 0 {
			end++
		}
		return rawValue{kind: kindNumber, raw: b[p:end]}, end
	case c == '{' || c == '[':
		end := containerEnd(b, p)
		return rawValue{kind: kindOther, raw: b[p:end]}, end
	default: // true, false, null
		end := p
		for end < len(b) && 'a' <= b[end] && b[end] <= 'z' {
			end++
		}
		return rawValue{kind: kindOther, raw: b[p:end]}, end
	}
}

// containerEnd returns the index just past the object or array at b[p].
func containerEnd(b []byte, p int) int {
	depth := 0
	for i := p; i < len(b); i++ {
		switch b[i] {
		case '"':
			i = stringEnd(b, i) - 1
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				return i + 1
			}
		}
	}
	return len(b)
}

// str returns v as a string, or false if it is not a JSON string.
func (v rawValue) str() (string, bool) {
	if v.kind != kindString {
		return "", false
	}
	if !v.escaped {
		return string(v.raw[1 : len(v.raw)-1]), true
	}
	var s string
	if json.Unmarshal(v.raw, &s) != nil {
		return "", false
	}
	return s, true
}

// intern returns v as one of the strings in set without allocating, or
// false when v is none of them. Cache statuses and region codes repeat on
// every line; sharing their strings saves an allocation per field.
func (v rawValue) intern(set []string) (string, bool) {
	if v.kind != kindString || v.escaped {
		return "", false
	}
	raw := v.raw[1 : len(v.raw)-1]
	for _, s := range set {
		if string(raw) == s {
			return s, true
		}
	}
	return "", false
}

// int64 returns v as a non-negative int64, or false if it is anything else:
// a string, a fraction (even 1.0), an exponent, a negative number or one
// beyond the range of int64.
func (v rawValue) int64() (int64, bool) {
	if v.kind != kindNumber || len(v.raw) == 0 {
		return 0, false
	}
	var n int64
	for _, c := range v.raw {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int64(c - '0')
		if n > (1<<63-1-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}
