// Package syslogngtest runs a real syslog-ng (Debian's syslog-ng-core and
// syslog-ng-mod-http) for tests: in the foreground, in a temporary
// directory of its own, with its own persist file, control socket and pid
// file, so that tests never touch a system syslog-ng and several may run
// at once. It ships what the config given says, as an edge's does.
package syslogngtest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Binary returns the path of syslog-ng, or an error when it or its http()
// destination is not installed.
func Binary() (string, error) {
	bin, err := exec.LookPath("syslog-ng")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/syslog-ng"); serr != nil {
			return "", err
		}
		bin = "/usr/sbin/syslog-ng"
	}
	if mods, _ := filepath.Glob("/usr/lib/syslog-ng/*/libhttp.so"); len(mods) == 0 {
		return "", errors.New("syslog-ng's http() destination is not installed (syslog-ng-mod-http)")
	}
	return bin, nil
}

// Require returns syslog-ng's path, or ends tb: it fails when CI=true, as
// .ci/run installs syslog-ng, and skips otherwise.
func Require(tb testing.TB) string {
	tb.Helper()
	bin, err := Binary()
	if err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("syslogngtest: syslog-ng is required when CI=true (apt-get install syslog-ng-core syslog-ng-mod-http): %v", err)
		}
		tb.Skipf("syslogngtest: skipping, %v", err)
	}
	return bin
}

// Shipper is a syslog-ng process run with a config and an environment.
type Shipper struct {
	tb   testing.TB
	bin  string
	conf string
	env  []string
	// Dir holds its persist file, control socket, pid file and anything
	// the config puts there (pass it in env, such as a disk buffer's dir).
	Dir string

	mu   sync.Mutex // cmd and done
	cmd  *exec.Cmd
	done chan struct{}

	logMu sync.Mutex
	logs  bytes.Buffer
}

// Start runs syslog-ng with the config at conf and env added to this
// process's environment (syslog-ng substitutes `NAME` from it), in dir,
// and waits until it has started. It is stopped when tb ends.
func Start(tb testing.TB, conf, dir string, env map[string]string) *Shipper {
	tb.Helper()
	s := &Shipper{tb: tb, bin: Require(tb), conf: conf, Dir: dir, env: os.Environ()}
	for k, v := range env {
		s.env = append(s.env, k+"="+v)
	}
	s.Start()
	tb.Cleanup(func() { s.Stop() })
	return s
}

// Start starts syslog-ng again after Stop or Kill, with its persist file
// and buffers as they were left.
func (s *Shipper) Start() {
	s.tb.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	ctl := filepath.Join(s.Dir, "syslog-ng.ctl")
	cmd := exec.Command(s.bin, "-F", "--stderr", "--no-caps", "-f", s.conf,
		"--persist-file", filepath.Join(s.Dir, "syslog-ng.persist"),
		"--control", ctl, "--pidfile", filepath.Join(s.Dir, "syslog-ng.pid"))
	cmd.Env = s.env
	cmd.Dir = s.Dir
	cmd.Stdout, cmd.Stderr = &lockedWriter{s: s}, &lockedWriter{s: s}
	if err := cmd.Start(); err != nil {
		s.tb.Fatalf("syslogngtest: start: %v", err)
	}
	s.cmd, s.done = cmd, make(chan struct{})
	go func(done chan struct{}) { cmd.Wait(); close(done) }(s.done)
	// It is up once its control socket answers; or it exited, saying why.
	// A guard against a hang, not a measure of how fast it starts.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, err := os.Stat(ctl); err == nil {
			return
		}
		select {
		case <-s.done:
			s.tb.Fatalf("syslogngtest: syslog-ng exited at start: %s", s.Logs())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.tb.Fatalf("syslogngtest: syslog-ng did not start within 2 minutes: %s", s.Logs())
		}
	}
}

// Stop stops syslog-ng with SIGTERM, as systemd does, and waits for it.
func (s *Shipper) Stop() { s.signal(syscall.SIGTERM) }

// Kill stops syslog-ng with SIGKILL and waits for it.
func (s *Shipper) Kill() { s.signal(syscall.SIGKILL) }

func (s *Shipper) signal(sig syscall.Signal) {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		<-done
	}
	os.Remove(filepath.Join(s.Dir, "syslog-ng.ctl"))
}

// Logs returns what syslog-ng said on stdout and stderr so far.
func (s *Shipper) Logs() string {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	return s.logs.String()
}

type lockedWriter struct{ s *Shipper }

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.s.logMu.Lock()
	defer w.s.logMu.Unlock()
	if w.s.logs.Len() > 1<<20 {
		return len(p), nil // enough to say what went wrong
	}
	return w.s.logs.Write(p)
}

// String names the shipper, for messages.
func (s *Shipper) String() string { return fmt.Sprintf("syslog-ng -f %s", s.conf) }
