// Package localcdn runs a whole CDN on this machine, on loopback, from
// throwaway processes in a temporary directory: the upload path (an nginx
// upload server as deploy/nginx/upload.conf, ClamAV's clamd on a signature
// database of the EICAR test string, and `cdnapi uploads`, which scans
// what is uploaded, promotes what is clean into the origin and lists it as
// the files of project "default"), an origin (Debian's nginx serving the
// promoted files, a few hundred generated ones at first), three nginx
// edges caching it as the regions FRA1, IAD1 and SIN1, each logging in the
// format of deploy/nginx/cdnapi-log.conf with a `cdnapi follow` tailing
// its log into a SQLite database, and `cdnapi serve` over that database,
// probing each edge's /health, authorizing uploads, and measuring the
// upload service and the scanner.
//
// Up records every process in a state file, so that Status and Down, run
// later by another command (scripts/cdn), find them. The processes are
// internal/fleet's: started detached, stopped by pid.
package localcdn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/cdnapi/cdnapi/internal/clamd"
	"github.com/cdnapi/cdnapi/internal/fleet"
)

// Region is one region of the CDN, as `cdnapi ingest regions` reads it.
type Region struct {
	Code    string `json:"code"`
	Name    string `json:"name"`
	Zone    string `json:"zone"`
	Country string `json:"country"`
	Status  string `json:"status"`
}

// Regions are the CDN's edges, in the order of their ports.
var Regions = []Region{
	{"FRA1", "Frankfurt", "eu-central", "DE", "operational"},
	{"IAD1", "Ashburn", "us-east", "US", "operational"},
	{"SIN1", "Singapore", "ap-southeast", "SG", "operational"},
}

// DefaultPortBase is the first of the fixed ports Up uses by default: the
// origin, then the edges, then the followers' metrics (see Ports).
const DefaultPortBase = 18180

// Addrs are the addresses of the CDN's parts.
type Addrs struct {
	Origin  string
	Edges   []string // one per region of Regions, in its order
	Metrics []string // each edge's follower's metrics, same order
	// API, Edge and Admin are serve's listeners.
	API, Edge, Admin string
	// Upload is the upload server's address, and UploadAuth serve's
	// listener that authorizes its requests.
	Upload, UploadAuth string
	// Ingest is serve's ingest address, where a shipped edge's syslog-ng
	// sends its lines (Options.Ship).
	Ingest string
}

// Ports returns the addresses on 127.0.0.1 from base up: base for the
// origin, base+1… for the edges, then one per follower; serve keeps its own
// defaults (8080, 8081 and 9090), so that the README's commands against serve
// work on the CDN as they are.
func Ports(base int) Addrs {
	at := func(p int) string { return "127.0.0.1:" + strconv.Itoa(p) }
	a := Addrs{Origin: at(base), API: "127.0.0.1:8080", Edge: "127.0.0.1:8081", Admin: "127.0.0.1:9090"}
	for i := range Regions {
		a.Edges = append(a.Edges, at(base+1+i))
		a.Metrics = append(a.Metrics, at(base+1+len(Regions)+i))
	}
	a.Upload, a.UploadAuth = at(base+1+2*len(Regions)), at(base+2+2*len(Regions))
	a.Ingest = at(base + 3 + 2*len(Regions))
	return a
}

// all returns every address, for the check that they are free.
func (a Addrs) all() []string {
	all := append(append([]string{a.Origin, a.API, a.Edge, a.Admin, a.Upload, a.UploadAuth}, a.Edges...), a.Metrics...)
	if a.Ingest != "" {
		all = append(all, a.Ingest)
	}
	return all
}

// Edge is one edge as recorded: where it listens and what it writes.
type Edge struct {
	Region  string `json:"region"`
	Addr    string `json:"addr"`
	Log     string `json:"log"`     // its access log, which its follower reads
	Rejects string `json:"rejects"` // the lines its follower refused
	Metrics string `json:"metrics"` // its follower's metrics address
	// Shipped: no follower; syslog-ng ships the log to serve's ingest
	// address (Options.Ship).
	Shipped bool `json:"shipped,omitempty"`
}

// CDN is a running CDN, as recorded in its state file.
type CDN struct {
	Dir    string `json:"dir"`  // the temporary directory that holds everything
	Repo   string `json:"repo"` // the cdnapi checkout it was built from
	DB     string `json:"db"`   // the DSN of the SQLite database
	Origin string `json:"origin"`
	Upload string `json:"upload"` // the upload server's address
	// UploadKey is a key of scope upload for project default.
	UploadKey string `json:"upload_key"`
	// EdgeKey is the edge key of the shipped edge, when there is one.
	EdgeKey string        `json:"edge_key,omitempty"`
	Edges   []Edge        `json:"edges"`
	Procs   []*fleet.Proc `json:"procs"`

	statePath string
	ship      string // Options.Ship, while Up runs
}

// Kinds of process.
const (
	kindNginx  = "nginx"
	kindFollow = "follow"
	kindServe  = "cdnapi"
)

// DefaultStatePath is where Up records the CDN unless told otherwise.
func DefaultStatePath() string { return filepath.Join(os.TempDir(), "cdnapi-cdn.json") }

// Load reads the state file.
func Load(statePath string) (*CDN, error) {
	c := &CDN{statePath: statePath}
	if err := fleet.ReadState(statePath, "CDN", c); err != nil {
		return nil, err
	}
	return c, nil
}

// save writes the state file.
func (c *CDN) save() error { return fleet.WriteState(c.statePath, c) }

// Down stops every process, last started first (serve, the followers, the
// edges, the origin), by pid, and removes the directory and the state file.
// It reports to w, a line each, what it stopped and what it removed, so
// that scripts/cdn down does not end in silence.
func (c *CDN) Down(w io.Writer) error {
	var errs []error
	procs := slices.Clone(c.Procs)
	slices.Reverse(procs)
	for _, p := range procs {
		pid, running := p.PID, p.Running()
		err := p.Stop(stopSignal(p.Kind), 30*time.Second)
		errs = append(errs, err)
		if p.Kind == kindNginx && pid > 0 {
			// nginx runs in its own session (pgid = pid): should its
			// master have been killed, this ends the workers it left.
			syscall.Kill(-pid, syscall.SIGKILL)
		}
		switch {
		case !running:
			fmt.Fprintf(w, "%s (%s) was not running\n", p.Name, p.Kind)
		case err == nil:
			fmt.Fprintf(w, "stopped %s (%s, pid %d)\n", p.Name, p.Kind, pid)
		}
	}
	if err := os.RemoveAll(c.Dir); err != nil {
		errs = append(errs, err)
	} else if c.Dir != "" {
		fmt.Fprintf(w, "removed %s\n", c.Dir)
	}
	errs = append(errs, fleet.RemoveState(c.statePath))
	return errors.Join(errs...)
}

// stopSignal is how each kind of process is asked to stop cleanly.
func stopSignal(kind string) syscall.Signal {
	if kind == kindNginx {
		return syscall.SIGQUIT // graceful: finish the requests in flight, log them
	}
	return syscall.SIGTERM // serve drains; a follower writes what it has read
}

// Health is one line of Status.
type Health struct {
	Name, Kind, Addr string
	PID              int
	OK               bool
	Detail           string
}

// Status checks every process: that it runs, and that it answers.
func (c *CDN) Status(ctx context.Context) []Health {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var out []Health
	for _, p := range c.Procs {
		h := Health{Name: p.Name, Kind: p.Kind, Addr: p.Addr, PID: p.PID}
		if !p.Running() {
			h.Detail = "not running; log " + p.Log
			out = append(out, h)
			continue
		}
		switch p.Kind {
		case kindUploads: // no address: running is all it shows
			h.OK, h.Detail = true, "scans "+filepath.Join(c.uploadsRoot(), "incoming")+" into "+c.originRoot()+", listed as project "+Project+"; log "+p.Log
			out = append(out, h)
			continue
		case kindClamd:
			h.Detail = "signatures: EICAR only; log " + p.Log
			cl, err := clamd.New(p.Addr)
			if err == nil {
				err = cl.Ping(ctx)
			}
			h.OK = err == nil
			if err != nil {
				h.Detail += "; " + err.Error()
			}
			out = append(out, h)
			continue
		}
		var u string
		switch {
		case p.Name == "origin":
			u, h.Detail = "http://"+p.Addr+"/index.html", "serves "+c.originRoot()
		case p.Name == "upload":
			u, h.Detail = "http://"+p.Addr+"/health", "writes into "+filepath.Join(c.uploadsRoot(), "incoming")
		case p.Kind == kindNginx:
			e := c.edge(p.Name)
			u, h.Detail = "http://"+p.Addr+"/health", "log "+e.Log
		case p.Kind == kindFollow:
			e := c.edge(p.Name[len("follow-"):])
			u, h.Detail = "http://"+p.Addr+"/metrics", "follows "+e.Log
		case p.Kind == kindShipper:
			e := c.edge(p.Name[len("syslog-ng-"):])
			// No address of its own: it answers when the ingest address does.
			u, h.Detail = "http://"+p.Addr+"/api/v1/openapi.json", "ships "+e.Log+" to http://"+p.Addr+"/api/v1/edge-logs; log "+p.Log
		case p.Kind == kindServe:
			u, h.Detail = "http://"+p.Admin+"/readyz", fmt.Sprintf("api %s, edge %s, admin %s", p.Addr, p.Edge, p.Admin)
		}
		code, err := httpStatus(ctx, u)
		h.OK = err == nil && code == http.StatusOK
		if err != nil {
			h.Detail += fmt.Sprintf("; %s: %v", u, err)
		} else if code != http.StatusOK {
			h.Detail += fmt.Sprintf("; %s: %d", u, code)
		}
		out = append(out, h)
	}
	return out
}

// edge returns the recorded edge of region; a zero Edge if there is none.
func (c *CDN) edge(region string) Edge {
	for _, e := range c.Edges {
		if e.Region == region {
			return e
		}
	}
	return Edge{}
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
