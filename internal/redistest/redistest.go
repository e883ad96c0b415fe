// Package redistest starts throwaway Redis servers for tests: Debian's
// redis-server, on a free loopback port, with its files in the test's
// temporary directory and nothing persisted, stopped when the test ends.
//
// Without redis-server a test skips, except when the environment variable
// CI is "true": there it fails, so CI never passes by skipping.
package redistest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// Server is a redis-server run by a test.
type Server struct {
	// Addr is host:port, URL the redis:// URL of the server.
	Addr, URL string

	tb   testing.TB
	dir  string
	port int
	cmd  *exec.Cmd
	done chan struct{}
}

// Start starts a server that stops when tb ends.
func Start(tb testing.TB) *Server {
	tb.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("redistest: redis-server is required when CI=true (apt-get install redis-server): %v", err)
		}
		tb.Skipf("redistest: redis-server is not installed: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	s := &Server{tb: tb, dir: tb.TempDir(), port: port}
	s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	s.URL = "redis://" + s.Addr
	s.Restart()
	tb.Cleanup(s.Stop)
	return s
}

// Restart starts the server again on its port after Stop; on a running
// server it does nothing.
func (s *Server) Restart() {
	s.tb.Helper()
	if s.cmd != nil {
		return
	}
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", s.dir, "--loglevel", "warning")
	logFile, err := os.OpenFile(filepath.Join(s.dir, "redis.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		s.tb.Fatal(err)
	}
	defer logFile.Close() // the child has its own descriptor
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// The server goes with the test binary, even one killed by -timeout.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		s.tb.Fatalf("redistest: start redis-server: %v", err)
	}
	s.cmd, s.done = cmd, make(chan struct{})
	go func() { cmd.Wait(); close(s.done) }()
	// Two minutes is a guard against a hang, not a measure of how fast it
	// starts: a machine under stress --cpu 4 took more than 10 s.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		err := ping(s.Addr)
		if err == nil {
			return
		}
		select {
		case <-s.done:
			s.cmd = nil
			s.tb.Fatalf("redistest: redis-server exited at start: %v", cmd.ProcessState)
		default:
		}
		if time.Now().After(deadline) {
			s.Stop()
			s.tb.Fatalf("redistest: redis-server does not answer: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Stop kills the server, as an outage would, and waits for it to exit.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
}

// ping sends PING over a fresh connection and reads the answer.
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}
