package fleet

import (
	"bufio"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// haproxyProc returns haproxy running deploy/haproxy.cfg in the foreground,
// with the fleet's addresses in the environment the file reads them from.
func (f *Fleet) haproxyProc(cdnapis []*Proc) *Proc {
	env := []string{
		"CDNAPI_API_BIND=" + f.API,
		"CDNAPI_EDGE_BIND=" + f.Edge,
		"CDNAPI_HAPROXY_SOCKET=" + f.Socket,
	}
	for i, c := range cdnapis {
		_, adminPort, _ := net.SplitHostPort(c.Admin)
		env = append(env,
			fmt.Sprintf("CDNAPI_%d_API=%s", i+1, c.Addr),
			fmt.Sprintf("CDNAPI_%d_EDGE=%s", i+1, c.Edge),
			fmt.Sprintf("CDNAPI_%d_ADMIN_PORT=%s", i+1, adminPort))
	}
	return &Proc{
		Name: HAProxy, Kind: "haproxy", Addr: f.API,
		Args: []string{"haproxy", "-db", "-f", f.Repo + "/deploy/haproxy.cfg"},
		Env:  env, Dir: f.Dir, Log: f.Dir + "/haproxy.log",
	}
}

// haproxyStats asks haproxy's stats socket for the state of each server of
// the backend "api" (the one the checks of all the others follow), by
// server name: "UP", "DOWN", "UP 1/2" (going down), "MAINT"...
func haproxyStats(socket string) (map[string]string, error) {
	conn, err := net.DialTimeout("unix", socket, time.Second)
	if err != nil {
		return nil, fmt.Errorf("haproxy stats socket: %w", err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.WriteString(conn, "show stat\n"); err != nil {
		return nil, err
	}
	r := bufio.NewReader(conn)
	header, err := r.ReadString('\n') // "# pxname,svname,...": CSV after the "# "
	if err != nil {
		return nil, err
	}
	cr := csv.NewReader(io.MultiReader(strings.NewReader(strings.TrimPrefix(header, "# ")), r))
	cr.FieldsPerRecord = -1
	rows, err := cr.ReadAll()
	if err != nil || len(rows) == 0 {
		return nil, fmt.Errorf("haproxy stats: %v", err)
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	states := map[string]string{}
	for _, row := range rows[1:] {
		if len(row) > col["status"] && row[col["pxname"]] == "api" {
			states[row[col["svname"]]] = row[col["status"]]
		}
	}
	return states, nil
}

// waitInRotation waits until haproxy sees every named server as up (want)
// or as out of rotation (!want).
func (f *Fleet) waitInRotation(ctx context.Context, want bool, names ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		states, err := haproxyStats(f.Socket)
		done := err == nil
		for _, n := range names {
			if up := states[n] == "UP"; up != want {
				done = false
			}
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("haproxy: servers %v not %s: %v %v", names, map[bool]string{true: "up", false: "down"}[want], states, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
