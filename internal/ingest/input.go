package ingest

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
)

// ErrNotNDJSON is what Input returns, wrapped with what the input looks
// like, for an input that is plainly not NDJSON (CSV, a JSON array,
// compressed data it cannot read): nothing of it is read further.
var ErrNotNDJSON = errors.New("ingest reads NDJSON, one JSON object per line, as cdnapi get -o ndjson prints them")

// compressed are the magic numbers of compressed formats Input does not
// read, with the command that decompresses each.
var compressed = []struct {
	magic, name, cmd string
}{
	{"\x28\xb5\x2f\xfd", "zstd", "zstd -dc"},
	{"BZh", "bzip2", "bzip2 -dc"},
	{"\xfd7zXZ\x00", "xz", "xz -dc"},
	{"PK\x03\x04", "zip", "unzip -p"},
}

// Input returns r ready for Run: gzip data is decompressed as it is read
// (gzipped reports it), and an input that is plainly not NDJSON is refused
// with an error that says what it looks like and what to do, before a line
// is parsed. Other mistakes are left to Run, line by line.
func Input(r io.Reader) (_ io.Reader, gzipped bool, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(6)
	if bytes.HasPrefix(head, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, true, fmt.Errorf("gzip data that does not decompress: %w", err)
		}
		rd, _, err := Input(zr)
		return rd, true, err
	}
	for _, c := range compressed {
		if bytes.HasPrefix(head, []byte(c.magic)) {
			return nil, false, fmt.Errorf("this is %s data; decompress it first, e.g. %s FILE | cdnapi ingest …: %w", c.name, c.cmd, ErrNotNDJSON)
		}
	}
	line := firstLine(br)
	switch {
	case len(line) == 0 || line[0] == '{':
	case line[0] == '[':
		return nil, false, fmt.Errorf("line 1 starts a JSON array; turn it into one object per line, e.g. jq -c '.[]' FILE | cdnapi ingest …: %w", ErrNotNDJSON)
	case bytes.ContainsAny(line, ",\t;") && !bytes.ContainsAny(line, "{}"):
		return nil, false, fmt.Errorf("line 1 looks like CSV (%s); %w", shorten(line, 60), ErrNotNDJSON)
	}
	return br, false, nil
}

// firstLine returns the first line of br that is not blank, without
// consuming it, trimmed of white space and a byte order mark; at most the
// buffer's size of it.
func firstLine(br *bufio.Reader) []byte {
	for n := 512; ; n *= 2 {
		buf, err := br.Peek(min(n, br.Size()))
		rest := bytes.TrimLeft(buf, " \t\r\n\ufeff")
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			return bytes.TrimSpace(rest[:i])
		}
		if err != nil || len(buf) == br.Size() {
			return bytes.TrimSpace(rest)
		}
	}
}

func shorten(b []byte, n int) string {
	if len(b) > n {
		return fmt.Sprintf("%q…", b[:n])
	}
	return fmt.Sprintf("%q", b)
}
