package clamd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Client sends commands to one clamd. It holds no connection: every command
// dials its own, as clamd answers one "z" command and closes. It is safe for
// concurrent use.
type Client struct {
	addr             string // as given
	network, address string // for net.Dial
}

// New returns a client of the clamd at addr: "unix:/path" or "/path" for a
// unix socket, "tcp://host:port" or "host:port" for TCP. It checks the form
// of addr only; nothing is dialled until a command.
func New(addr string) (*Client, error) {
	c := &Client{addr: addr}
	switch {
	case addr == "":
		return nil, errors.New("clamd address is empty: want unix:/path/clamd.ctl or host:port")
	case strings.HasPrefix(addr, "unix:"):
		c.network, c.address = "unix", strings.TrimPrefix(addr, "unix:")
		if c.address == "" {
			return nil, fmt.Errorf("clamd address %q has no socket path: want unix:/path/clamd.ctl", addr)
		}
	case strings.HasPrefix(addr, "/"):
		c.network, c.address = "unix", addr
	default:
		c.network, c.address = "tcp", strings.TrimPrefix(addr, "tcp://")
		host, port, err := net.SplitHostPort(c.address)
		if err != nil {
			return nil, fmt.Errorf("clamd address %q: want unix:/path, /path, tcp://host:port or host:port: %w", addr, err)
		}
		if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
			return nil, fmt.Errorf("clamd address %q: port %q is not a number from 1 to 65535", addr, port)
		}
		if host == "" || strings.Contains(host, "/") {
			return nil, fmt.Errorf("clamd address %q: want a host before the port, such as 127.0.0.1:3310", addr)
		}
	}
	return c, nil
}

// Addr returns the address as given to New, for logs.
func (c *Client) Addr() string { return c.addr }

// Ping checks that clamd answers.
func (c *Client) Ping(ctx context.Context) error {
	reply, err := c.simple(ctx, "zPING\x00")
	if err != nil {
		return err
	}
	if reply != "PONG" {
		return c.errorf("PING", "unexpected reply %q", reply)
	}
	return nil
}

// Version is clamd's answer to VERSION.
type Version struct {
	// Engine is ClamAV's version, such as "1.4.6".
	Engine string
	// Database is the version of the daily signature database, and
	// Signatures the time it was built; 0 and the zero time when clamd has
	// no dated database loaded (only unofficial signature files).
	Database   int
	Signatures time.Time
	// Raw is the reply, such as "ClamAV 1.4.6/27450/Tue Nov 24 09:40:32 2026".
	Raw string
}

// Version asks clamd for its engine and database versions.
func (c *Client) Version(ctx context.Context) (Version, error) {
	reply, err := c.simple(ctx, "zVERSION\x00")
	if err != nil {
		return Version{}, err
	}
	v, err := parseVersion(reply)
	if err != nil {
		return Version{}, c.errorf("VERSION", "%v", err)
	}
	return v, nil
}

// parseVersion reads "ClamAV 1.4.6/27450/Tue Nov 24 09:40:32 2026", or
// "ClamAV 1.4.6" without a dated database.
func parseVersion(s string) (Version, error) {
	v := Version{Raw: s}
	parts := strings.SplitN(s, "/", 3)
	engine, ok := strings.CutPrefix(parts[0], "ClamAV ")
	if !ok || engine == "" {
		return Version{}, fmt.Errorf("unexpected reply %q", s)
	}
	v.Engine = engine
	if len(parts) == 1 {
		return v, nil
	}
	if len(parts) != 3 {
		return Version{}, fmt.Errorf("unexpected reply %q: want ClamAV engine/database/date", s)
	}
	db, err := strconv.Atoi(parts[1])
	if err != nil {
		return Version{}, fmt.Errorf("reply %q: database version: %v", s, err)
	}
	// clamd formats the time with ctime(3), in its own local time zone: on
	// the same host, ours.
	t, err := time.ParseInLocation(time.ANSIC, parts[2], time.Local)
	if err != nil {
		return Version{}, fmt.Errorf("reply %q: database date: %v", s, err)
	}
	v.Database, v.Signatures = db, t
	return v, nil
}

// Result is the verdict of a scan that completed.
type Result struct {
	Infected bool
	// Signature names what was found, such as "Eicar-Test-Signature".
	Signature string
}

// ScanFile scans the contents of f. Over a unix socket clamd is handed the
// descriptor (FILDES) and reads the file itself; over TCP the file is
// streamed from its start (INSTREAM). Either way the whole file is scanned
// and f's offset is where it was when ScanFile returns; but clamd moves it
// during a scan by descriptor, so f must not be read or written at its
// offset meanwhile (ReadAt and WriteAt are fine).
func (c *Client) ScanFile(ctx context.Context, f *os.File) (Result, error) {
	if c.network != "unix" {
		fi, err := f.Stat()
		if err != nil {
			return Result{}, fmt.Errorf("clamd scan of %s: %w", f.Name(), err)
		}
		// SectionReader reads with ReadAt, which leaves the offset alone;
		// the size is read at the start, as clamd's own FILDES does.
		return c.instream(ctx, io.NewSectionReader(f, 0, fi.Size()))
	}
	return c.fildes(ctx, f)
}

// ScanReader streams what r yields to clamd (INSTREAM) and scans it. A
// stream longer than clamd's StreamMaxLength is an error, not a verdict.
func (c *Client) ScanReader(ctx context.Context, r io.Reader) (Result, error) {
	return c.instream(ctx, r)
}

// chunkSize is the most INSTREAM sends in one chunk. clamd copies each into
// a temporary file, so larger chunks mean fewer writes on both sides.
const chunkSize = 64 << 10

// instream sends the INSTREAM command and r's bytes in length-prefixed
// chunks, then the zero-length chunk that ends them, and reads the verdict.
func (c *Client) instream(ctx context.Context, r io.Reader) (Result, error) {
	conn, done, err := c.dial(ctx, "INSTREAM")
	if err != nil {
		return Result{}, err
	}
	defer done()
	// clamd may answer before the stream ends ("INSTREAM size limit
	// exceeded") and close the connection; then our writes fail, and a
	// reset could discard the answer. So it is read from the start, next to
	// the writing.
	replies := make(chan replyOrErr, 1)
	go func() {
		s, err := readReply(conn)
		replies <- replyOrErr{s, err}
	}()
	werr := writeStream(conn, r)
	if werr != nil && !isConnError(werr) {
		// Our reader failed, not the connection: close it to end the read.
		conn.Close()
		<-replies
		return Result{}, fmt.Errorf("clamd at %s: INSTREAM: reading the stream: %w", c.addr, werr)
	}
	rep := <-replies
	if rep.err != nil {
		if werr != nil {
			return Result{}, c.ioError(ctx, "INSTREAM", werr)
		}
		return Result{}, c.ioError(ctx, "INSTREAM", rep.err)
	}
	return c.verdict("INSTREAM", rep.s)
}

type replyOrErr struct {
	s   string
	err error
}

// connError marks an error of the connection, as opposed to one of the
// reader being streamed.
type connError struct{ err error }

func (e connError) Error() string { return e.err.Error() }
func (e connError) Unwrap() error { return e.err }

func isConnError(err error) bool {
	var ce connError
	return errors.As(err, &ce)
}

// writeStream writes the INSTREAM command and r's contents as chunks.
func writeStream(conn net.Conn, r io.Reader) error {
	buf := make([]byte, 4+chunkSize+4)
	copy(buf, "zINSTREAM\x00")
	if _, err := conn.Write(buf[:len("zINSTREAM\x00")]); err != nil {
		return connError{err}
	}
	for {
		n, rerr := io.ReadFull(r, buf[4:4+chunkSize])
		if rerr != nil && rerr != io.EOF && rerr != io.ErrUnexpectedEOF {
			return rerr
		}
		end := 0
		if n > 0 { // a zero-length chunk would end the stream
			putUint32(buf, uint32(n))
			end = 4 + n
		}
		last := rerr != nil
		if last {
			putUint32(buf[end:], 0)
			end += 4
		}
		if _, err := conn.Write(buf[:end]); err != nil {
			return connError{err}
		}
		if last {
			return nil
		}
	}
}

func putUint32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
}

// fildes hands f's descriptor to clamd as SCM_RIGHTS ancillary data, after
// the FILDES command, with the one dummy byte the protocol asks for.
func (c *Client) fildes(ctx context.Context, f *os.File) (Result, error) {
	conn, done, err := c.dial(ctx, "FILDES")
	if err != nil {
		return Result{}, err
	}
	defer done()
	uc := conn.(*net.UnixConn)
	if _, err := uc.Write([]byte("zFILDES\x00")); err != nil {
		return Result{}, c.ioError(ctx, "FILDES", err)
	}
	// clamd rewinds the descriptor it is handed, which shares its offset
	// with f: the offset is put back once clamd has answered.
	if pos, err := f.Seek(0, io.SeekCurrent); err == nil {
		defer f.Seek(pos, io.SeekStart)
	}
	raw, err := f.SyscallConn()
	if err != nil {
		return Result{}, fmt.Errorf("clamd scan of %s: %w", f.Name(), err)
	}
	var werr error
	// Control keeps the descriptor open for as long as it is in use.
	if err := raw.Control(func(fd uintptr) {
		_, _, werr = uc.WriteMsgUnix([]byte{0}, syscall.UnixRights(int(fd)), nil)
	}); err != nil {
		return Result{}, fmt.Errorf("clamd scan of %s: %w", f.Name(), err)
	}
	if werr != nil {
		return Result{}, c.ioError(ctx, "FILDES", werr)
	}
	reply, err := readReply(conn)
	if err != nil {
		return Result{}, c.ioError(ctx, "FILDES", err)
	}
	return c.verdict("FILDES", reply)
}

// verdict reads a scan's reply: "stream: OK", "fd[9]: Name FOUND", or an
// error ending in " ERROR".
func (c *Client) verdict(cmd, reply string) (Result, error) {
	if msg, ok := strings.CutSuffix(reply, " ERROR"); ok {
		hint := ""
		if strings.Contains(msg, "size limit exceeded") {
			hint = " (raise StreamMaxLength in clamd.conf, or scan the file by descriptor over the unix socket)"
		}
		return Result{}, c.errorf(cmd, "%s%s", msg, hint)
	}
	_, verdict, ok := strings.Cut(reply, ": ")
	switch {
	case !ok:
	case verdict == "OK":
		return Result{}, nil
	case strings.HasSuffix(verdict, " FOUND"):
		return Result{Infected: true, Signature: strings.TrimSuffix(verdict, " FOUND")}, nil
	}
	return Result{}, c.errorf(cmd, "unexpected reply %q", reply)
}

// simple sends a command without arguments and returns the reply.
func (c *Client) simple(ctx context.Context, cmd string) (string, error) {
	name := strings.TrimSuffix(cmd[1:], "\x00")
	conn, done, err := c.dial(ctx, name)
	if err != nil {
		return "", err
	}
	defer done()
	if _, err := conn.Write([]byte(cmd)); err != nil {
		return "", c.ioError(ctx, name, err)
	}
	reply, err := readReply(conn)
	if err != nil {
		return "", c.ioError(ctx, name, err)
	}
	return reply, nil
}

// maxReply bounds a reply: clamd's are a line.
const maxReply = 4 << 10

// readReply reads one NUL-terminated reply.
func readReply(conn net.Conn) (string, error) {
	buf := make([]byte, 0, 256)
	for {
		if len(buf) == cap(buf) {
			if len(buf) >= maxReply {
				return "", fmt.Errorf("reply longer than %d bytes", maxReply)
			}
			buf = append(buf, make([]byte, len(buf))...)[:len(buf)]
		}
		n, err := conn.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if i := bytes.IndexByte(buf, 0); i >= 0 {
			return string(buf[:i]), nil
		}
		if err == io.EOF {
			if len(buf) > 0 { // a reply cut short, or one without NUL
				return strings.TrimSpace(string(buf)), nil
			}
			return "", errors.New("connection closed without a reply")
		}
		if err != nil {
			return "", err
		}
	}
}

// dial connects for one command. The connection's deadline is ctx's, and
// it is closed when ctx is cancelled, so that no read or write outlives
// ctx; done releases both.
func (c *Client) dial(ctx context.Context, cmd string) (net.Conn, func(), error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, c.network, c.address)
	if err != nil {
		return nil, nil, c.ioError(ctx, "dial", err)
	}
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	return conn, func() { stop(); conn.Close() }, nil
}

// ioError describes a failure to talk to clamd: ctx's error when ctx ended
// it, else the cause without Go's "dial unix /path:" prefix, with a hint
// when clamd is plainly not there.
func (c *Client) ioError(ctx context.Context, op string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return &opError{addr: c.addr, op: op, err: ctxErr}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return &opError{addr: c.addr, op: op, err: context.DeadlineExceeded}
	}
	var se *os.SyscallError
	if errors.As(err, &se) {
		err = se.Err
	}
	e := &opError{addr: c.addr, op: op, err: err}
	switch {
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ENOENT):
		e.hint = "is clamd running, and is this its LocalSocket or TCPSocket?"
	case errors.Is(err, syscall.EACCES):
		e.hint = "the socket's permissions (LocalSocketGroup, LocalSocketMode in clamd.conf) do not let this user in"
	}
	return e
}

// errorf is an error that clamd reported, or an answer not understood.
func (c *Client) errorf(op, format string, args ...any) error {
	return &opError{addr: c.addr, op: op, err: fmt.Errorf(format, args...)}
}

// opError reads "clamd at unix:/x: dial: connection refused (hint)"; it
// unwraps to the cause, so that errors.Is finds context.Canceled or
// syscall.ECONNREFUSED.
type opError struct {
	addr, op string
	err      error
	hint     string
}

func (e *opError) Error() string {
	s := "clamd at " + e.addr + ": " + e.op + ": " + e.err.Error()
	if e.hint != "" {
		s += " (" + e.hint + ")"
	}
	return s
}

func (e *opError) Unwrap() error { return e.err }
