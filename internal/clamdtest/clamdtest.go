// Package clamdtest starts throwaway clamd servers for tests: Debian's
// clamd (package clamav-daemon), with a database that detects only EICAR
// (clamd.WriteTestDatabase), its socket, configuration, log and temporary
// files in the test's temporary directory, stopped when the test ends. No
// real signatures are needed, and freshclam is never run.
//
// Without clamd a test skips, except when the environment variable CI is
// "true": there it fails, so CI never passes by skipping.
package clamdtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi/internal/clamd"
)

// EICAR is the EICAR anti-virus test file: harmless, and reported by every
// scanner, here by the database that Start writes (clamd.EICAR).
const EICAR = clamd.EICAR

// EICARSignature is what clamd reports finding in EICAR with that database:
// clamd appends ".UNOFFICIAL" to signatures from an unsigned database.
const EICARSignature = "Eicar-Test-Signature.UNOFFICIAL"

const (
	// startTimeout bounds clamd's start: it loads a one-signature database
	// in a tenth of a second, but a busy two-core CI machine can be slow.
	startTimeout = time.Minute
	stopTimeout  = 30 * time.Second
)

// Binary returns the path of clamd (clamd.Binary).
func Binary() (string, error) { return clamd.Binary() }

// Options shape a server and its database.
type Options struct {
	// SignaturesBuilt is the database's build time, which VERSION reports;
	// zero means now. Database is its version, 1 when zero.
	SignaturesBuilt time.Time
	Database        int
	// Undated leaves out the dated database: VERSION then shows the engine
	// only, as with hand-made signature files.
	Undated bool
	// StreamMaxLength is the most INSTREAM accepts, in bytes; zero keeps
	// clamd's default (25 MiB).
	StreamMaxLength int64
	// TCP makes clamd listen on a free 127.0.0.1 port too (TCPAddr).
	TCP bool
}

// Server is a clamd run by a test.
type Server struct {
	bin, dir, conf, log string
	sock, tcpAddr       string

	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has exited
}

// Start writes the database and configuration into a temporary directory,
// starts clamd, and waits until it answers PING. It is stopped when tb ends.
func Start(tb testing.TB, o Options) *Server {
	tb.Helper()
	bin, err := Binary()
	if err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("clamdtest: clamd is required when CI=true: %v", err)
		}
		tb.Skipf("clamdtest: skipping: %v", err)
	}
	// A unix socket's path must fit in 108 bytes, which a long test name
	// under TMPDIR can exceed: the socket gets a short directory of its own.
	sockDir, err := os.MkdirTemp("", "clamd")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(sockDir) })
	dir := tb.TempDir()
	s := &Server{bin: bin, dir: dir, conf: filepath.Join(dir, "clamd.conf"),
		log: filepath.Join(dir, "clamd.log"), sock: filepath.Join(sockDir, "clamd.sock")}
	if err := s.write(o); err != nil {
		tb.Fatalf("clamdtest: %v", err)
	}
	s.Start(tb)
	tb.Cleanup(func() { s.Stop(tb) })
	return s
}

// write writes the database and clamd.conf.
func (s *Server) write(o Options) error {
	db, tmp := filepath.Join(s.dir, "db"), filepath.Join(s.dir, "tmp")
	for _, d := range []string{db, tmp} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return err
		}
	}
	var built time.Time
	version := 0
	if !o.Undated {
		built, version = o.SignaturesBuilt, o.Database
		if built.IsZero() {
			built = time.Now()
		}
		if version == 0 {
			version = 1
		}
	}
	if err := clamd.WriteTestDatabase(db, built, version); err != nil {
		return err
	}
	c := clamd.Config{Socket: s.sock, Database: db, Temporary: tmp, Log: s.log, StreamMaxLength: o.StreamMaxLength}
	if o.TCP {
		port, err := freePort()
		if err != nil {
			return err
		}
		s.tcpAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		c.TCPPort = port
	}
	return clamd.WriteConfig(s.conf, c)
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Addr is the unix socket's address for clamd.New: "unix:/tmp/…/clamd.sock".
func (s *Server) Addr() string { return "unix:" + s.sock }

// TCPAddr is "127.0.0.1:port" with Options.TCP, else "".
func (s *Server) TCPAddr() string { return s.tcpAddr }

// Start starts clamd again after Stop, on the same socket, port and
// database, and waits until it answers; on a running server it does
// nothing.
func (s *Server) Start(tb testing.TB) {
	tb.Helper()
	if s.cmd != nil {
		return
	}
	logFile, err := os.OpenFile(filepath.Join(s.dir, "clamd.out"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		tb.Fatal(err)
	}
	defer logFile.Close() // the child has its own descriptor
	cmd := exec.Command(s.bin, "--config-file="+s.conf)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// clamd goes with the test binary, even one killed by -timeout; and a
	// terminal's Ctrl-C does not reach it before the Cleanup does.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("clamdtest: start clamd: %v", err)
	}
	s.cmd, s.exited = cmd, make(chan struct{})
	go func() { cmd.Wait(); close(s.exited) }()
	if err := s.waitReady(); err != nil {
		s.kill()
		tb.Fatalf("clamdtest: %v", err)
	}
}

// waitReady polls with PING, on each socket, until clamd answers.
func (s *Server) waitReady() error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	addrs := []string{s.Addr()}
	if s.tcpAddr != "" {
		addrs = append(addrs, s.tcpAddr)
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for _, addr := range addrs {
		c, err := clamd.New(addr)
		if err != nil {
			return err
		}
		for {
			pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
			err := c.Ping(pctx)
			pcancel()
			if err == nil {
				break
			}
			select {
			case <-s.exited:
				return fmt.Errorf("clamd exited during start-up (%v): %s", s.cmd.ProcessState, s.logTail())
			case <-ctx.Done():
				return fmt.Errorf("clamd not ready after %v: %v: %s", startTimeout, err, s.logTail())
			case <-tick.C:
			}
		}
	}
	return nil
}

// Stop stops clamd as its service would (SIGTERM; it removes its socket),
// escalating to SIGKILL, and waits for it to exit. Commands then fail to
// dial until Start.
func (s *Server) Stop(tb testing.TB) {
	tb.Helper()
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	s.cmd.Process.Signal(syscall.SIGCONT) // a frozen clamd acts on SIGTERM once it runs
	select {
	case <-s.exited:
		s.cmd = nil
	case <-time.After(stopTimeout):
		s.kill()
		tb.Errorf("clamdtest: clamd did not exit %v after SIGTERM: %s", stopTimeout, s.logTail())
	}
}

// Freeze stops clamd with SIGSTOP: it is there but answers nothing. The
// kernel still accepts connections into its socket's backlog and takes what
// a client writes into the buffers, so a client hangs on the reply, as with
// a clamd that is stuck. Thaw, or the end of tb, lets it run again.
func (s *Server) Freeze(tb testing.TB) {
	tb.Helper()
	if s.cmd == nil {
		tb.Fatal("clamdtest: Freeze of a clamd that is not running")
	}
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		tb.Fatalf("clamdtest: SIGSTOP: %v", err)
	}
	tb.Cleanup(func() { s.Thaw(tb) })
}

// Thaw lets a frozen clamd run again (SIGCONT); it then answers what
// waited, in the order it came. On a clamd not frozen it does nothing.
func (s *Server) Thaw(tb testing.TB) {
	tb.Helper()
	if s.cmd == nil {
		return
	}
	if err := s.cmd.Process.Signal(syscall.SIGCONT); err != nil && !errors.Is(err, os.ErrProcessDone) {
		tb.Errorf("clamdtest: SIGCONT: %v", err)
	}
}

// kill ends clamd at once and waits for it.
func (s *Server) kill() {
	s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

// logTail returns the end of clamd's output and log, for error messages.
func (s *Server) logTail() string {
	var b []byte
	for _, name := range []string{filepath.Join(s.dir, "clamd.out"), s.log} {
		data, err := os.ReadFile(name)
		if err != nil {
			b = append(b, "(no "+filepath.Base(name)+": "+err.Error()+")\n"...)
		}
		b = append(b, data...)
	}
	const max = 2000
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return strings.TrimSpace(string(b))
}
