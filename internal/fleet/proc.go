package fleet

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Proc is one long-running process of the fleet: how to start it again, and
// the pid of its current run. It is kept in the state file, so that a later
// `fleet status` or `fleet down` finds it.
type Proc struct {
	Name string `json:"name"`
	Kind string `json:"kind"` // postgres, redis, cdnapi or haproxy
	Addr string `json:"addr"` // what clients connect to
	// Admin is the address of cdnapi's admin listener (health checks).
	Admin string   `json:"admin,omitempty"`
	Edge  string   `json:"edge,omitempty"`
	Args  []string `json:"args"` // program and arguments
	Env   []string `json:"env,omitempty"`
	Dir   string   `json:"dir"`           // working directory
	Log   string   `json:"log"`           // stdout and stderr
	UID   int      `json:"uid,omitempty"` // run as this user when non-zero (postgres refuses root)
	GID   int      `json:"gid,omitempty"`
	PID   int      `json:"pid"` // 0 while stopped
}

// reaped holds the exits of the processes this process started: they are
// our children, so until Wait they would linger as zombies that kill(pid, 0)
// still finds.
var reaped sync.Map // pid → chan struct{}, closed on exit

// Start runs the process detached (its own session, so a terminal's Ctrl-C
// does not reach it and it outlives this program) with its output appended
// to its log, and records its pid.
func (p *Proc) Start() error {
	if p.Running() {
		return fmt.Errorf("%s is already running (pid %d)", p.Name, p.PID)
	}
	logFile, err := os.OpenFile(p.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close() // the child has its own descriptor
	if p.UID != 0 {
		if err := logFile.Chown(p.UID, p.GID); err != nil {
			return err
		}
	}
	cmd := exec.Command(p.Args[0], p.Args[1:]...)
	cmd.Dir = p.Dir
	cmd.Env = append(os.Environ(), p.Env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if p.UID != 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(p.UID), Gid: uint32(p.GID)}
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.Name, err)
	}
	p.PID = cmd.Process.Pid
	exited := make(chan struct{})
	reaped.Store(p.PID, exited)
	go func() {
		cmd.Wait()
		close(exited)
	}()
	return nil
}

// Running reports whether the recorded pid is alive (and not a zombie of ours).
func (p *Proc) Running() bool {
	if p.PID <= 0 {
		return false
	}
	if ch, ok := reaped.Load(p.PID); ok {
		select {
		case <-ch.(chan struct{}):
			return false
		default:
			return true
		}
	}
	return syscall.Kill(p.PID, 0) == nil && !zombie(p.PID)
}

// zombie reports whether pid has exited and waits for its parent to reap
// it. A process started by an earlier `fleet up` belongs to PID 1 once that
// command has exited, and an init that reaps in its own time (every second
// or two, in some containers) left Stop waiting that long for each process.
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false // no /proc: kill(pid, 0) decides alone
	}
	// "pid (comm) state …": comm may hold spaces and parentheses.
	rest := b[bytes.LastIndexByte(b, ')')+1:]
	f := bytes.Fields(rest)
	return len(f) > 0 && string(f[0]) == "Z"
}

// Signal sends sig to the process.
func (p *Proc) Signal(sig syscall.Signal) error {
	if !p.Running() {
		return fmt.Errorf("%s is not running", p.Name)
	}
	return syscall.Kill(p.PID, sig)
}

// Stop sends sig and waits up to timeout for the process to exit, then
// kills it. It does nothing to a process that is not running.
func (p *Proc) Stop(sig syscall.Signal, timeout time.Duration) error {
	if !p.Running() {
		p.PID = 0
		return nil
	}
	if err := syscall.Kill(p.PID, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stop %s: %w", p.Name, err)
	}
	var err error
	if !p.waitExit(timeout) {
		err = fmt.Errorf("%s (pid %d) still running %v after %v; killed", p.Name, p.PID, timeout, sig)
		syscall.Kill(p.PID, syscall.SIGKILL)
		p.waitExit(10 * time.Second)
	}
	p.PID = 0
	return err
}

// Kill sends SIGKILL and waits for the exit.
func (p *Proc) Kill() error { return p.Stop(syscall.SIGKILL, 10*time.Second) }

// waitExit polls until the process has exited or timeout passes.
func (p *Proc) waitExit(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for p.Running() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// LogTail returns the last lines of the process's log, for error messages.
func (p *Proc) LogTail() string {
	b, err := os.ReadFile(p.Log)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return strings.Join(lines, "\n")
}
