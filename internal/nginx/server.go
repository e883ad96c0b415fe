package nginx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

const (
	startTimeout = 10 * time.Second
	stopTimeout  = 15 * time.Second // above worker_shutdown_timeout
)

// Server is one nginx: its directory, configuration and address, and the
// master process while Start runs it. Its methods are safe for concurrent
// use.
type Server struct {
	dir, addr, bin string
	log            string // the access log; "" for an origin, which logs nothing

	mu  sync.Mutex
	run *master // nil while stopped
}

// master is one run of the nginx master process.
type master struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once cmd has exited
}

// New writes the configuration of site, listening on addr (host:port), into
// dir (created if need be), and checks it with nginx -t. It starts nothing.
func New(dir, addr string, site Site) (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, err
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, fmt.Errorf("nginx: address %q: %w", addr, err)
	}
	conf, err := mainConfig(dir, addr, site)
	if err != nil {
		return nil, err
	}
	// nginx creates the cache directory, but not the parent of the
	// temporary files' directories.
	if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(conf), 0o644); err != nil {
		return nil, err
	}
	s := &Server{dir: dir, addr: addr, bin: bin}
	switch site := site.(type) {
	case Edge:
		s.log = site.logPath(dir)
	case Upload:
		s.log = site.logPath(dir)
	}
	if err := s.Test(); err != nil {
		return nil, err
	}
	return s, nil
}

// Args returns the command line that runs the server in the foreground (the
// configuration says daemon off), for a supervisor other than Start. -e
// names the error log before the configuration is read: without it, nginx
// opens its build's /var/log/nginx/error.log first.
func (s *Server) Args() []string {
	return []string{s.bin, "-p", s.dir + "/", "-c", s.ConfPath(), "-e", s.ErrorLogPath()}
}

// Test checks the configuration (nginx -t).
func (s *Server) Test() error {
	out, err := exec.Command(s.bin, append(s.Args()[1:], "-t", "-q")...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("nginx -t %s: %w: %s", s.ConfPath(), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Dir returns the server's directory.
func (s *Server) Dir() string { return s.dir }

// ConfPath returns the path of the server's nginx.conf.
func (s *Server) ConfPath() string { return filepath.Join(s.dir, "nginx.conf") }

// ErrorLogPath returns the path of the server's error log.
func (s *Server) ErrorLogPath() string { return filepath.Join(s.dir, "error.log") }

// Addr returns host:port, where the server listens.
func (s *Server) Addr() string { return s.addr }

// URL returns the server's base URL, http://host:port, without a slash.
func (s *Server) URL() string { return "http://" + s.addr }

// HealthURL returns the URL of an edge's health location, which answers 200
// and is not logged: what serve's --region-probe asks.
func (s *Server) HealthURL() string { return s.URL() + "/health" }

// LogPath returns the path of an edge's access log; "" for an origin.
func (s *Server) LogPath() string { return s.log }

// Running reports whether Start's master process is up.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.run != nil
}

// Start runs nginx as a child of this process and returns once it accepts
// connections. The child has its own process group (so that Kill reaches its
// workers, and a terminal's Ctrl-C does not), and gets SIGTERM, a fast
// shutdown that takes its workers with it, if this process dies first: a
// test binary killed by go test's -timeout leaves no nginx behind.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.run != nil {
		return fmt.Errorf("nginx on %s is already running", s.addr)
	}
	args := s.Args()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = s.dir
	// stderr: what nginx says before its error log is open.
	stderr, err := os.OpenFile(s.ErrorLogPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer stderr.Close() // the child has its own descriptor
	cmd.Stdout, cmd.Stderr = stderr, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start nginx: %w", err)
	}
	m := &master{cmd: cmd, exited: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(m.exited)
	}()
	if err := s.waitAccepting(m); err != nil {
		m.kill()
		return err
	}
	s.run = m
	return nil
}

// waitAccepting polls until the server accepts a connection.
func (s *Server) waitAccepting(m *master) error {
	deadline := time.Now().Add(startTimeout)
	for {
		c, err := net.DialTimeout("tcp", s.addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-m.exited:
			return fmt.Errorf("nginx on %s exited at start (%v): %s", s.addr, m.cmd.ProcessState, s.errorLogTail())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nginx on %s not accepting after %v: %v: %s", s.addr, startTimeout, err, s.errorLogTail())
		}
	}
}

// Stop stops the server gracefully (SIGQUIT: it stops accepting, finishes
// the requests in flight, and its workers exit before the master) and waits
// for it, killing it if it takes longer than worker_shutdown_timeout allows.
// Stopping a stopped server does nothing.
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.run == nil {
		return nil
	}
	m := s.run
	s.run = nil
	if err := m.cmd.Process.Signal(syscall.SIGQUIT); err != nil && !errors.Is(err, os.ErrProcessDone) {
		m.kill()
		return fmt.Errorf("stop nginx on %s: %w", s.addr, err)
	}
	select {
	case <-m.exited:
		return nil
	case <-time.After(stopTimeout):
		m.kill()
		return fmt.Errorf("nginx on %s still running %v after SIGQUIT; killed: %s", s.addr, stopTimeout, s.errorLogTail())
	}
}

// Kill ends the server at once, as a crash of its machine would: SIGKILL to
// the master and its workers. Killing the master alone would leave the
// workers serving on the listening socket they inherited. Kill returns once
// the address refuses connections.
func (s *Server) Kill() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.run == nil {
		return nil
	}
	s.run.kill()
	s.run = nil
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", s.addr, time.Second)
		if err != nil {
			return nil
		}
		c.Close()
		if time.Now().After(deadline) {
			return fmt.Errorf("nginx on %s killed, but its address still accepts connections", s.addr)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Restart stops the server gracefully if it runs, and starts it again on the
// same address, directory and cache.
func (s *Server) Restart() error {
	if err := s.Stop(); err != nil {
		return err
	}
	return s.Start()
}

// Reopen makes nginx reopen its log files, as `nginx -s reopen` and
// logrotate do (SIGUSR1 to the master, which reopens them and tells its
// workers to), and returns once every worker writes the access log now at
// LogPath: a log renamed before Reopen gets no more lines.
func (s *Server) Reopen() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.run == nil {
		return fmt.Errorf("nginx on %s is not running", s.addr)
	}
	pid := s.run.cmd.Process.Pid
	if err := syscall.Kill(pid, syscall.SIGUSR1); err != nil {
		return fmt.Errorf("reopen nginx on %s: %w", s.addr, err)
	}
	if s.log == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	for {
		done, err := workersWrite(pid, s.log)
		if err == nil && done {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("nginx on %s: workers not writing %s after reopen: %v: %s", s.addr, s.log, err, s.errorLogTail())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// workersWrite reports whether every worker process of master has the file
// now at path open (the same inode, not only the same name): the workers
// reopen their logs some time after the master does.
func workersWrite(master int, path string) (bool, error) {
	want, err := os.Stat(path)
	if err != nil {
		return false, err
	}
	workers, err := workerPIDs(master)
	if err != nil || len(workers) == 0 {
		return false, err
	}
	for _, w := range workers {
		fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", w))
		if err != nil {
			return false, err
		}
		found := false
		for _, fd := range fds {
			fi, err := os.Stat(fmt.Sprintf("/proc/%d/fd/%s", w, fd.Name()))
			if err == nil && os.SameFile(fi, want) {
				found = true
				break
			}
		}
		if !found {
			return false, nil
		}
	}
	return true, nil
}

// workerPIDs returns the worker processes among master's children (not its
// cache manager and loader, which write no access log).
func workerPIDs(master int) ([]int, error) {
	children, err := childPIDs(master)
	var workers []int
	for _, pid := range children {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if strings.HasPrefix(string(cmdline), "nginx: worker process") {
			workers = append(workers, pid)
		}
	}
	return workers, err
}

// childPIDs returns the processes whose parent is pid.
func childPIDs(pid int) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	parent := strconv.Itoa(pid)
	var pids []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", child))
		if err != nil {
			continue
		}
		// "pid (comm) state ppid ...": comm may hold spaces, so read
		// after its closing parenthesis.
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) >= 2 && f[1] == parent {
			pids = append(pids, child)
		}
	}
	return pids, nil
}

// kill sends SIGKILL to the master's process group, waits for the master,
// and reaps its children (workers, cache manager and loader), which this
// process inherits as their subreaper.
func (m *master) kill() {
	subErr := subreaper()
	pid := m.cmd.Process.Pid
	children, _ := childPIDs(pid)
	syscall.Kill(-pid, syscall.SIGKILL)
	<-m.exited
	if subErr != nil {
		return // they go to PID 1: nothing to wait for here
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, c := range children {
		for {
			// ECHILD until the kernel has handed the orphan to us.
			_, err := syscall.Wait4(c, nil, 0, nil)
			if err != syscall.ECHILD && err != syscall.EINTR || time.Now().After(deadline) {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// errorLogTail returns the end of the error log, for error messages.
func (s *Server) errorLogTail() string {
	b, err := os.ReadFile(s.ErrorLogPath())
	if err != nil {
		return "(no error log: " + err.Error() + ")"
	}
	const max = 2000
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return strings.TrimSpace(string(b))
}

// prSetChildSubreaper is prctl's PR_SET_CHILD_SUBREAPER (linux/prctl.h).
const prSetChildSubreaper = 36

// subreaper makes this process, once, the reaper of its orphaned
// descendants. A SIGKILL to nginx's process group ends the master with its
// workers, which then belong to the nearest subreaper, or to PID 1; where PID
// 1 reaps no orphans (a container's init that is not an init), they would
// stay zombies. As their reaper, kill waits for them itself.
var subreaper = sync.OnceValue(func() error {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		return errno
	}
	return nil
})
