// Package fleet runs cdnapi as an operator would on one machine, from
// throwaway processes in a temporary directory: a PostgreSQL primary and a
// streaming standby, Redis for the shared rate limits, three `cdnapi serve`
// processes, and haproxy in front (deploy/haproxy.cfg). Up records every
// process in a state file, so that Status and Down, run later by another
// command, find them; Drill breaks the parts one at a time under load.
//
// It does not import cdnapi: it drives the built binary, as an operator's
// scripts would.
package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"
)

// Fleet is a running fleet, as recorded in its state file.
type Fleet struct {
	Dir  string `json:"dir"`  // the temporary directory that holds everything
	Repo string `json:"repo"` // the cdnapi checkout it was built from
	// API and Edge are haproxy's frontends: the fleet's public addresses.
	API  string `json:"api"`
	Edge string `json:"edge"`
	// Socket is haproxy's stats socket.
	Socket string `json:"socket"`
	DB     string `json:"db"`    // database name on both servers
	Files  int    `json:"files"` // files seeded: what a cursor walk must return
	// Limits says what holds the rate limits: "redis", "memory" (per
	// process; this cdnapi has no --rate-limit-redis) or "" (none).
	Limits    string  `json:"limits"`
	RateLimit int     `json:"rate_limit"` // per client, per second
	RateBurst int     `json:"rate_burst"`
	Procs     []*Proc `json:"procs"`

	statePath string
}

// Names of the parts.
const (
	Primary = "primary"
	Standby = "standby"
	Redis   = "redis"
	HAProxy = "haproxy"
)

// Servers names the cdnapi processes, as haproxy.cfg does.
var Servers = []string{"c1", "c2", "c3"}

// DefaultStatePath is where Up records the fleet unless told otherwise.
func DefaultStatePath() string { return filepath.Join(os.TempDir(), "cdnapi-fleet.json") }

// Proc returns the part called name; it panics on an unknown name, which is
// a bug of the caller.
func (f *Fleet) Proc(name string) *Proc {
	for _, p := range f.Procs {
		if p.Name == name {
			return p
		}
	}
	panic("fleet: no part " + name)
}

// Load reads the state file.
func Load(statePath string) (*Fleet, error) {
	f := &Fleet{statePath: statePath}
	if err := ReadState(statePath, "fleet", f); err != nil {
		return nil, err
	}
	return f, nil
}

// Save writes the state file.
func (f *Fleet) Save() error { return WriteState(f.statePath, f) }

// ReadState reads the JSON state file at path into v. A missing file is an
// error that says no what is up.
func ReadState(path, what string, v any) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("no %s is up (no %s)", what, path)
	}
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// WriteState writes v as the JSON state file at path, replacing it
// atomically so that a concurrent `fleet status` (or Status of a local
// CDN) never reads half of it.
func WriteState(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// RemoveState removes the state file at path, if there is one.
func RemoveState(path string) error {
	if path == "" {
		return nil
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// Env returns the fleet's addresses as NAME='value' pairs for a shell.
func (f *Fleet) Env() []string {
	return []string{
		"FLEET_DIR='" + f.Dir + "'",
		"FLEET_CDNAPI='" + filepath.Join(f.Dir, "cdnapi") + "'",
		"FLEET_API='" + f.API + "'",
		"FLEET_EDGE='" + f.Edge + "'",
		"FLEET_PRIMARY_DSN='" + f.PrimaryDSN() + "'",
		"FLEET_STANDBY_DSN='" + pgDSN(f.Proc(Standby).Addr, f.DB) + "'",
		"FLEET_REDIS_URL='redis://" + f.Proc(Redis).Addr + "'",
		fmt.Sprintf("FLEET_STANDBY_PID=%d", f.Proc(Standby).PID),
		fmt.Sprintf("FLEET_REDIS_PID=%d", f.Proc(Redis).PID),
	}
}

// Down stops every part, haproxy first and PostgreSQL last, by pid, removes
// the temporary directory and the state file.
func (f *Fleet) Down() error {
	// Last started, first stopped; processes of one kind stop together,
	// so that the cdnapi processes drain at once rather than in turn.
	errc := make(chan error, len(f.Procs))
	var errs []error
	procs := slices.Clone(f.Procs)
	slices.Reverse(procs)
	for i := 0; i < len(procs); {
		j := i
		for j < len(procs) && procs[j].Kind == procs[i].Kind {
			go func(p *Proc) { errc <- p.Stop(stopSignal(p.Kind), 30*time.Second) }(procs[j])
			j++
		}
		for ; i < j; i++ {
			errs = append(errs, <-errc)
		}
	}
	errs = append(errs, os.RemoveAll(f.Dir), RemoveState(f.statePath))
	return errors.Join(errs...)
}

// stopSignal is how each kind of process is asked to stop cleanly.
func stopSignal(kind string) syscall.Signal {
	switch kind {
	case "postgres":
		return syscall.SIGINT // fast shutdown: ends open sessions, no waiting for clients
	case "haproxy":
		return syscall.SIGUSR1 // soft stop: finish the requests in flight
	default:
		return syscall.SIGTERM // cdnapi drains; redis exits
	}
}

// Health is one line of Status.
type Health struct {
	Name, Kind, Addr string
	PID              int
	OK               bool
	Detail           string
}

// Status checks every part: the process, and what it answers.
func (f *Fleet) Status(ctx context.Context) []Health {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	stats, statsErr := haproxyStats(f.Socket)
	var out []Health
	for _, p := range f.Procs {
		h := Health{Name: p.Name, Kind: p.Kind, Addr: p.Addr, PID: p.PID, Detail: "not running"}
		if p.Running() {
			h.OK, h.Detail = f.probe(ctx, p, stats, statsErr)
		}
		out = append(out, h)
	}
	return out
}

// probe asks running part p what it answers, as its kind allows: whether
// it is OK, and what it said. stats are haproxy's, by server, unless
// statsErr.
func (f *Fleet) probe(ctx context.Context, p *Proc, stats map[string]string, statsErr error) (ok bool, detail string) {
	switch p.Kind {
	case "postgres":
		standby, err := pgQueryBool(ctx, pgDSN(p.Addr, "postgres"), "SELECT pg_is_in_recovery()")
		if err != nil {
			return false, err.Error()
		}
		return true, map[bool]string{false: "primary (read-write)", true: "standby (streaming, read-only)"}[standby]
	case "redis":
		if err := redisPing(p.Addr); err != nil {
			return false, err.Error()
		}
		return true, "PONG"
	case "cdnapi":
		code, err := httpStatus(ctx, "http://"+p.Admin+"/readyz")
		detail = fmt.Sprintf("edge %s, admin %s: /readyz %d", p.Edge, p.Admin, code)
		if err != nil {
			detail = fmt.Sprintf("edge %s, admin %s: /readyz: %v", p.Edge, p.Admin, err)
		}
		if statsErr == nil {
			detail += ", haproxy: " + stats[p.Name]
		}
		return err == nil && code == http.StatusOK, detail
	case "haproxy":
		if statsErr != nil {
			return false, statsErr.Error()
		}
		return true, "edge " + f.Edge
	}
	return false, ""
}

// httpStatus GETs u and returns the status code.
func httpStatus(ctx context.Context, u string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	res.Body.Close()
	return res.StatusCode, nil
}

// redisPing sends PING in Redis's protocol and expects PONG.
func redisPing(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	buf := make([]byte, 16)
	n, err := conn.Read(buf)
	if err != nil {
		return err
	}
	if string(buf[:n]) != "+PONG\r\n" {
		return fmt.Errorf("PING answered %q", buf[:n])
	}
	return nil
}

// freePorts returns n distinct TCP ports on 127.0.0.1 that were free a
// moment ago. They are held open together so that none repeats.
func freePorts(n int) ([]int, error) {
	ports := make([]int, n)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports, nil
}
