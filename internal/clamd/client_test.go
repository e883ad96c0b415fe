package clamd_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi/internal/clamd"
	"github.com/cdnapi/cdnapi/internal/clamdtest"
)

func TestNew(t *testing.T) {
	for _, addr := range []string{"unix:/run/clamav/clamd.ctl", "/run/clamav/clamd.ctl",
		"tcp://127.0.0.1:3310", "127.0.0.1:3310", "localhost:3310", "[::1]:3310"} {
		c, err := clamd.New(addr)
		if err != nil {
			t.Errorf("New(%q): %v", addr, err)
			continue
		}
		if c.Addr() != addr {
			t.Errorf("New(%q).Addr() = %q", addr, c.Addr())
		}
	}
	for _, addr := range []string{"", "unix:", "clamd.sock", "127.0.0.1", "tcp://127.0.0.1",
		"127.0.0.1:0", "127.0.0.1:65536", "127.0.0.1:http", ":3310", "tcp:///x:1"} {
		if _, err := clamd.New(addr); err == nil {
			t.Errorf("New(%q) succeeded, want an error", addr)
		}
	}
}

// ctx returns a context that ends with the test, with a bound.
func ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func client(t testing.TB, addr string) *clamd.Client {
	c, err := clamd.New(addr)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// tempFile writes data to a new file and returns it open, at offset 0.
func tempFile(t testing.TB, data string) *os.File {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestPingAndVersion(t *testing.T) {
	built := time.Date(2026, 11, 24, 9, 40, 32, 0, time.UTC)
	s := clamdtest.Start(t, clamdtest.Options{SignaturesBuilt: built, Database: 27450})
	c := client(t, s.Addr())
	if err := c.Ping(ctx(t)); err != nil {
		t.Fatal(err)
	}
	v, err := c.Version(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if v.Engine == "" || strings.Contains(v.Engine, "ClamAV") || v.Database != 27450 || !v.Signatures.Equal(built) {
		t.Errorf("Version = %+v, want engine, database 27450 built %v", v, built)
	}
	if want := "/27450/" + built.Local().Format(time.ANSIC); !strings.HasSuffix(v.Raw, want) {
		t.Errorf("Raw = %q, want it to end in %q", v.Raw, want)
	}
}

func TestVersionUndated(t *testing.T) {
	s := clamdtest.Start(t, clamdtest.Options{Undated: true})
	v, err := client(t, s.Addr()).Version(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if v.Engine == "" || v.Database != 0 || !v.Signatures.IsZero() || v.Raw != "ClamAV "+v.Engine {
		t.Errorf("Version = %+v, want the engine alone", v)
	}
	// The undated database detects EICAR all the same.
	res, err := client(t, s.Addr()).ScanReader(ctx(t), strings.NewReader(clamdtest.EICAR))
	if err != nil || !res.Infected {
		t.Errorf("ScanReader(EICAR) = %+v, %v", res, err)
	}
}

func TestScanFile(t *testing.T) {
	s := clamdtest.Start(t, clamdtest.Options{TCP: true})
	for _, tc := range []struct{ name, addr string }{
		{"unix FILDES", s.Addr()},
		{"TCP INSTREAM", s.TCPAddr()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := client(t, tc.addr)
			for _, f := range []struct {
				name, data string
				want       clamd.Result
			}{
				{"clean", strings.Repeat("a clean file\n", 10000), clamd.Result{}},
				{"EICAR", clamdtest.EICAR, clamd.Result{Infected: true, Signature: clamdtest.EICARSignature}},
				{"empty", "", clamd.Result{}},
			} {
				file := tempFile(t, f.data)
				// The caller's offset is neither used nor moved.
				const off = 5
				if _, err := file.Seek(off, io.SeekStart); err != nil {
					t.Fatal(err)
				}
				got, err := c.ScanFile(ctx(t), file)
				if err != nil {
					t.Errorf("%s: %v", f.name, err)
				} else if got != f.want {
					t.Errorf("%s: got %+v, want %+v", f.name, got, f.want)
				}
				if pos, _ := file.Seek(0, io.SeekCurrent); pos != off {
					t.Errorf("%s: offset %d after the scan, want %d", f.name, pos, off)
				}
			}
		})
	}
}

func TestScanReader(t *testing.T) {
	s := clamdtest.Start(t, clamdtest.Options{TCP: true})
	for _, addr := range []string{s.Addr(), s.TCPAddr()} {
		c := client(t, addr)
		for _, tc := range []struct {
			name string
			r    io.Reader
			want clamd.Result
		}{
			{"clean", bytes.NewReader(bytes.Repeat([]byte{'x'}, 200<<10)), clamd.Result{}},
			{"empty", strings.NewReader(""), clamd.Result{}},
			// EICAR after more than one chunk, read a few bytes at a time.
			{"EICAR in pieces", smallReads{io.MultiReader(strings.NewReader(clamdtest.EICAR))},
				clamd.Result{Infected: true, Signature: clamdtest.EICARSignature}},
		} {
			got, err := c.ScanReader(ctx(t), tc.r)
			if err != nil {
				t.Errorf("%s %s: %v", addr, tc.name, err)
			} else if got != tc.want {
				t.Errorf("%s %s: got %+v, want %+v", addr, tc.name, got, tc.want)
			}
		}
	}
}

// smallReads returns at most 7 bytes a read.
type smallReads struct{ r io.Reader }

func (s smallReads) Read(p []byte) (int, error) {
	if len(p) > 7 {
		p = p[:7]
	}
	return s.r.Read(p)
}

func TestScanReaderError(t *testing.T) {
	s := clamdtest.Start(t, clamdtest.Options{})
	_, err := client(t, s.Addr()).ScanReader(ctx(t), io.MultiReader(strings.NewReader("abc"), failingReader{}))
	if err == nil || !strings.Contains(err.Error(), "reading the stream: disk on fire") {
		t.Errorf("got %v, want the reader's error", err)
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

func TestSizeLimit(t *testing.T) {
	s := clamdtest.Start(t, clamdtest.Options{StreamMaxLength: 100 << 10, TCP: true})
	big := strings.Repeat("x", 4<<20)
	for _, addr := range []string{s.Addr(), s.TCPAddr()} {
		c := client(t, addr)
		res, err := c.ScanReader(ctx(t), strings.NewReader(big))
		if err == nil || !strings.Contains(err.Error(), "INSTREAM size limit exceeded") ||
			!strings.Contains(err.Error(), "StreamMaxLength") {
			t.Errorf("%s: ScanReader of 4 MiB = %+v, %v; want the size limit error", addr, res, err)
		}
	}
	// Over TCP a file is streamed too, and meets the same limit.
	_, err := client(t, s.TCPAddr()).ScanFile(ctx(t), tempFile(t, big))
	if err == nil || !strings.Contains(err.Error(), "size limit exceeded") {
		t.Errorf("ScanFile over TCP: %v, want the size limit error", err)
	}
	// By descriptor there is no stream, and no limit.
	res, err := client(t, s.Addr()).ScanFile(ctx(t), tempFile(t, big))
	if err != nil || res.Infected {
		t.Errorf("ScanFile over unix: %+v, %v", res, err)
	}
}

func TestCancelled(t *testing.T) {
	s := clamdtest.Start(t, clamdtest.Options{TCP: true})
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	c := client(t, s.Addr())
	if err := c.Ping(cancelled); !errors.Is(err, context.Canceled) {
		t.Errorf("Ping: %v, want context.Canceled", err)
	}
	if _, err := c.ScanFile(cancelled, tempFile(t, "x")); !errors.Is(err, context.Canceled) {
		t.Errorf("ScanFile: %v, want context.Canceled", err)
	}

	// Cancelled in the middle of a stream: the connection is closed, and the
	// next write fails.
	for _, addr := range []string{s.Addr(), s.TCPAddr()} {
		ctx, cancel := context.WithCancel(t.Context())
		r := &cancellingReader{n: 10 << 20, cancelAt: 1 << 20, cancel: cancel}
		_, err := client(t, addr).ScanReader(ctx, r)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s: ScanReader cancelled mid-stream: %v, want context.Canceled", addr, err)
		}
		if r.n == 0 {
			t.Errorf("%s: the whole stream was sent after the cancel", addr)
		}
	}

	// A deadline that has passed.
	past, cancel := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
	defer cancel()
	if _, err := c.Version(past); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Version: %v, want context.DeadlineExceeded", err)
	}
}

// cancellingReader yields n bytes of 'x', and calls cancel once cancelAt
// bytes are read.
type cancellingReader struct {
	n, read, cancelAt int
	cancel            func()
}

func (r *cancellingReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	p = p[:min(len(p), r.n)]
	for i := range p {
		p[i] = 'x'
	}
	r.n -= len(p)
	r.read += len(p)
	if r.read >= r.cancelAt {
		r.cancel()
	}
	return len(p), nil
}

func TestStopped(t *testing.T) {
	s := clamdtest.Start(t, clamdtest.Options{TCP: true})
	s.Stop(t)
	for _, addr := range []string{s.Addr(), s.TCPAddr()} {
		c := client(t, addr)
		err := c.Ping(ctx(t))
		if err == nil {
			t.Fatalf("%s: Ping succeeded with clamd stopped", addr)
		}
		if !errors.Is(err, syscall.ECONNREFUSED) && !errors.Is(err, syscall.ENOENT) {
			t.Errorf("%s: %v, want ECONNREFUSED or ENOENT", addr, err)
		}
		if want := "clamd at " + addr + ": dial: "; !strings.HasPrefix(err.Error(), want) ||
			!strings.Contains(err.Error(), "is clamd running") {
			t.Errorf("%s: %q, want it to start %q and say what to check", addr, err, want)
		}
		if _, err := c.ScanFile(ctx(t), tempFile(t, clamdtest.EICAR)); err == nil {
			t.Errorf("%s: ScanFile succeeded with clamd stopped", addr)
		}
	}
	s.Start(t)
	if err := client(t, s.Addr()).Ping(ctx(t)); err != nil {
		t.Errorf("Ping after Start: %v", err)
	}
}
