// Package ingest loads files, assets and regions into a store: from NDJSON,
// one object per line with the field names of the API output, or from any
// Go code (the demo generator) that feeds a Loader.
//
// Every record passes the Validator, which checks each field against the
// shapes of API.md, before it is written. Writes are upserts in batches,
// so loading the same records twice leaves the store as loading them once.
// Run reads a whole input inside one store transaction: a crash, a kill or
// an invalid line (unless invalid lines are skipped) leaves the store as it
// was before.
package ingest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/cdnapi/cdnapi"
)

// Store is what an ingest needs of a cdnapi.Store.
type Store interface {
	// Write runs fn in one transaction: all that fn writes through w is
	// committed when fn returns nil; nothing is if it returns an error, ctx
	// ends or the process dies.
	Write(ctx context.Context, fn func(w cdnapi.Writer) error) error
	// ListRegions returns every region; an asset must name one of them.
	ListRegions(ctx context.Context) ([]cdnapi.Region, error)
}

// MaxLineBytes is the longest line Run accepts, without its line ending. A
// record of the API is a few hundred bytes; 64 KiB leaves room for long
// paths and names while a runaway line (a missing newline, a binary file)
// fails fast instead of filling memory.
const MaxLineBytes = 64 << 10

// Options says how Run reads its input.
type Options struct {
	// Kind is the kind of record every line holds.
	Kind Kind
	// Project is the project of files whose line has no "project" field.
	Project string
	// SkipInvalid writes the valid lines and skips the invalid ones. By
	// default one invalid line means nothing is written.
	SkipInvalid bool
	// Rejects, when set, receives every invalid line as it was read, each
	// followed by a newline.
	Rejects io.Writer
	// OnInvalid, when set, is called with each invalid line's error, in
	// input order, on the goroutine that called Run.
	OnInvalid func(*LineError)
	// BatchSize is the number of records per write; DefaultBatchSize when 0.
	BatchSize int
	// Progress, when set, is kept up to date as the input is read, for a
	// progress display on another goroutine.
	Progress *Progress
}

// Result is what Run did.
type Result struct {
	Lines   int64 // lines read
	Invalid int64 // lines found invalid
	Written int64 // records written and committed
}

// LineError is an invalid line: its number, counted from 1, and what is
// wrong with it.
type LineError struct {
	Line int64
	Err  *FieldError
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }

// InvalidError is Run's error when the input held invalid lines and
// Options.SkipInvalid was not set: nothing was written.
type InvalidError struct {
	Lines int64 // the number of invalid lines
}

func (e *InvalidError) Error() string {
	if e.Lines == 1 {
		return "1 invalid line; nothing was written"
	}
	return fmt.Sprintf("%d invalid lines; nothing was written", e.Lines)
}

// Progress is how far a Run has read. Its methods are safe to call from any
// goroutine while Run works.
type Progress struct {
	lines, bytes, invalid atomic.Int64
}

// Lines returns the number of lines read so far.
func (p *Progress) Lines() int64 { return p.lines.Load() }

// Bytes returns the number of input bytes read so far.
func (p *Progress) Bytes() int64 { return p.bytes.Load() }

// Invalid returns the number of invalid lines so far.
func (p *Progress) Invalid() int64 { return p.invalid.Load() }

// Run reads NDJSON records of opts.Kind from r and writes them to st, all
// in one transaction. Each line must hold one JSON object whose fields are
// those of the API output (assets add "region"; files may add "project");
// see Validator for what each field must hold.
//
// With opts.SkipInvalid unset, any invalid line makes Run report every
// invalid line through opts.OnInvalid, write nothing, and return an
// *InvalidError. With it set, Run commits the valid lines. Lines are upserts
// by ID (regions by code), so running the same input again changes nothing.
func Run(ctx context.Context, st Store, r io.Reader, opts Options) (Result, error) {
	if opts.Progress == nil {
		opts.Progress = new(Progress)
	}
	switch opts.Kind {
	case Files:
		if !cdnapi.ValidProject(opts.Project) {
			return Result{}, fmt.Errorf("ingest: project %q: want %s", opts.Project, wantProject)
		}
		return run(ctx, st, r, opts, &fileFormat, NewValidator(nil))
	case Assets:
		regions, err := st.ListRegions(ctx)
		if err != nil {
			return Result{}, fmt.Errorf("ingest: read the regions: %w", err)
		}
		return run(ctx, st, r, opts, &assetFormat, NewValidator(regions))
	case Regions:
		return run(ctx, st, r, opts, &regionFormat, NewValidator(nil))
	}
	return Result{}, fmt.Errorf("ingest: unknown kind %q", opts.Kind)
}

// run is Run for one format.
func run[T any](ctx context.Context, st Store, r io.Reader, opts Options, f *format[T], v *Validator) (Result, error) {
	var res Result
	err := st.Write(ctx, func(w cdnapi.Writer) error {
		check := func(rec *T) error { return f.check(v, rec) }
		loader := NewLoader(ctx, check, f.put(w), opts.BatchSize)
		defer loader.Abort() // waits for the writing goroutine; nothing after Close
		in := newLineReader(r, opts.Progress)
		vals := make([]rawValue, len(f.fields))
		writing := true // false once an invalid line dooms the transaction
		for {
			line, tooLong, err := in.next(opts.Rejects)
			if err == io.EOF {
				break
			}
			if err != nil {
				return fmt.Errorf("ingest: read line %d: %w", in.line, err)
			}
			res.Lines++
			if res.Lines%4096 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			var bad error
			if tooLong {
				bad = errTooLong
			} else if rec, err := f.parse(line, vals, opts.Project); err != nil {
				bad = err
			} else if writing {
				bad = loader.Add(rec) // checks rec
			} else {
				bad = check(&rec)
			}
			if bad == nil {
				continue
			}
			fe, ok := errors.AsType[*FieldError](bad)
			if !ok {
				return bad // a write failed
			}
			res.Invalid++
			opts.Progress.invalid.Add(1)
			if opts.OnInvalid != nil {
				opts.OnInvalid(&LineError{Line: in.line, Err: fe})
			}
			if opts.Rejects != nil && !in.spilled {
				if err := writeLine(opts.Rejects, line); err != nil {
					return fmt.Errorf("ingest: write a rejected line: %w", err)
				}
			}
			if !opts.SkipInvalid && writing {
				// Nothing will be committed: stop writing, but read on to
				// report every invalid line in one go.
				loader.Abort()
				writing = false
			}
		}
		if !writing {
			return &InvalidError{Lines: res.Invalid}
		}
		return loader.Close()
	})
	if err != nil {
		res.Written = 0
		return res, err
	}
	res.Written = res.Lines - res.Invalid
	return res, nil
}

var errTooLong = &FieldError{Problem: fmt.Sprintf("longer than %d bytes", MaxLineBytes),
	Want: "one JSON object per line of at most 64 KiB"}

func writeLine(w io.Writer, line []byte) error {
	if _, err := w.Write(line); err != nil {
		return err
	}
	_, err := w.Write([]byte{'\n'})
	return err
}

// byteOrderMark is U+FEFF in UTF-8.
var byteOrderMark = []byte("\xEF\xBB\xBF")

// lineReader splits its input into lines of at most MaxLineBytes. A UTF-8
// byte-order mark at the very start of the input is skipped.
type lineReader struct {
	r        *bufio.Reader
	line     int64 // the number of the last line returned
	spilled  bool  // the last line was too long for the buffer and went to next's writer
	progress *Progress
}

func newLineReader(r io.Reader, p *Progress) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 1<<20), progress: p}
}

// next returns the next line without its "\n" or "\r\n", and whether it is
// longer than MaxLineBytes. A line too long even for the buffer comes back
// nil, with spilled set: it is read to its end in pieces, each written to
// long (when not nil), so that no line needs more memory than the buffer. The line is valid until the next call. At the
// end of the input next returns io.EOF; a last line without a newline is
// still a line.
func (lr *lineReader) next(long io.Writer) (line []byte, tooLong bool, err error) {
	line, err = lr.r.ReadSlice('\n')
	lr.progress.bytes.Add(int64(len(line)))
	lr.spilled = errors.Is(err, bufio.ErrBufferFull)
	if lr.spilled {
		lr.line++
		for errors.Is(err, bufio.ErrBufferFull) {
			if long != nil {
				if _, werr := long.Write(line); werr != nil {
					return nil, true, werr
				}
			}
			line, err = lr.r.ReadSlice('\n')
			lr.progress.bytes.Add(int64(len(line)))
		}
		if long != nil {
			if _, werr := long.Write(line); werr != nil {
				return nil, true, werr
			}
			if len(line) == 0 || line[len(line)-1] != '\n' {
				long.Write([]byte{'\n'})
			}
		}
		lr.progress.lines.Add(1)
		if err == io.EOF {
			err = nil
		}
		return nil, true, err
	}
	if err == io.EOF && len(line) == 0 {
		return nil, false, io.EOF
	}
	if err != nil && err != io.EOF {
		return nil, false, err
	}
	lr.line++
	lr.progress.lines.Add(1)
	line = trimEOL(line)
	if lr.line == 1 {
		// Editors on Windows start UTF-8 files with a byte-order mark; it
		// marks the encoding of the input, not a character of line 1.
		line = bytes.TrimPrefix(line, byteOrderMark)
	}
	return line, len(line) > MaxLineBytes, nil
}

// trimEOL removes a trailing "\n" or "\r\n".
func trimEOL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
		if n := len(b); n > 0 && b[n-1] == '\r' {
			b = b[:n-1]
		}
	}
	return b
}
