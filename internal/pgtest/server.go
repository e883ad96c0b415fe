package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// serverSettings trade durability, which a throwaway cluster does not need,
// for speed. Every setting goes on the command line, which overrides
// postgresql.conf: a replica copies its primary's files, but gets its own
// port.
var serverSettings = []string{
	"listen_addresses=127.0.0.1",
	"fsync=off",
	"full_page_writes=off",
	"synchronous_commit=off",
	"max_connections=200", // parallel tests each hold a pool
	// A replica that was stopped for a test must find the WAL it missed
	// when it comes back.
	"wal_keep_size=256MB",
	"log_min_messages=warning",
	"log_timezone=UTC",
}

const (
	startTimeout = time.Minute
	stopTimeout  = time.Minute
)

// server is one run of the postgres server process.
type server struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has exited
	log    string
}

// startServer starts postgres on the data directory in dir, with its socket
// in dir, and waits until it accepts connections.
//
// The server runs as a direct child of the test binary, not daemonised by
// pg_ctl, so that the kernel can end it with the test binary: Pdeathsig
// sends it SIGQUIT (immediate shutdown) when its parent goes, which covers a
// test binary killed by go test's -timeout, when no Cleanup runs.
func (env *environment) startServer(dir string, port int) (*server, error) {
	args := []string{"-D", filepath.Join(dir, "data"), "-p", strconv.Itoa(port), "-k", dir}
	for _, s := range serverSettings {
		args = append(args, "-c", s)
	}
	logPath := filepath.Join(dir, "server.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child has its own descriptor

	cmd := env.command("postgres", args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Setpgid keeps a terminal's Ctrl-C from stopping the server before the
	// tests' Cleanup does. The Go runtime never retires the thread that
	// forked a child unless a goroutine locked to it exits, so Pdeathsig
	// fires only when the process ends.
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGQUIT
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	s := &server{cmd: cmd, exited: make(chan struct{}), log: logPath}
	go func() {
		cmd.Wait()
		close(s.exited)
	}()
	if err := s.waitReady(port); err != nil {
		s.kill()
		return nil, err
	}
	return s, nil
}

// waitReady polls until the server accepts a connection on port.
func (s *server) waitReady(port int) error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	dsn := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=5", port)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		conn, err := pgx.Connect(ctx, dsn)
		if err == nil {
			return conn.Close(ctx)
		}
		select {
		case <-s.exited:
			return fmt.Errorf("postgres exited during start-up (%v): %s", s.cmd.ProcessState, s.logTail())
		case <-ctx.Done():
			return fmt.Errorf("postgres not ready after %v: %v: %s", startTimeout, err, s.logTail())
		case <-tick.C:
		}
	}
}

// stop asks for a fast shutdown and waits for the process to exit, escalating
// to an immediate shutdown and then SIGKILL if it does not.
func (s *server) stop() error {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGQUIT} {
		if err := s.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
			return fmt.Errorf("stop postgres: %w", err)
		}
		select {
		case <-s.exited:
			return nil
		case <-time.After(stopTimeout):
		}
	}
	s.kill()
	return fmt.Errorf("stop postgres: no exit after %v: %s", 2*stopTimeout, s.logTail())
}

// kill ends the process at once and waits for it.
func (s *server) kill() {
	s.cmd.Process.Kill()
	<-s.exited
}

// logTail returns the end of the server's log, for error messages.
func (s *server) logTail() string {
	b, err := os.ReadFile(s.log)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	const max = 2000
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return strings.TrimSpace(string(b))
}
