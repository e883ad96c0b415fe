package main

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi/internal/nginxtest"
	"github.com/cdnapi/cdnapi/internal/pgtest"
	"github.com/cdnapi/cdnapi/internal/syslogngtest"
)

// The tests of this file ship a real nginx edge's log with a real
// syslog-ng, configured by deploy/syslog-ng/cdnapi-edge.conf as shipped,
// to serve's ingest address: the edge runs no cdnapi and holds no database
// credential.

// startEdgeShipper starts syslog-ng with the shipped config, shipping the
// log at logPath to the ingest listener at ingestAddr with key.
func startEdgeShipper(t testing.TB, logPath, ingestAddr, key string) *syslogngtest.Shipper {
	t.Helper()
	conf, err := filepath.Abs("../../deploy/syslog-ng/cdnapi-edge.conf")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	return syslogngtest.Start(t, conf, dir, map[string]string{
		"CDNAPI_EDGE_LOG":   logPath,
		"CDNAPI_INGEST_URL": "http://" + ingestAddr + "/api/v1/edge-logs",
		"CDNAPI_EDGE_KEY":   key,
		"CDNAPI_BUFFER_DIR": dir,
	})
}

// storedOnce checks that the store at db holds exactly one row per request
// of served, and none other, waiting up to wait for the last to arrive. It
// returns how long that took.
func storedOnce(t *testing.T, db string, served map[string]bool, wait time.Duration, logs func() string) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := start.Add(wait)
	for {
		ids := storedAssetIDs(t, db)
		if len(ids) >= len(served) || time.Now().After(deadline) {
			stored := map[string]int{}
			for _, id := range ids {
				stored[id]++
			}
			lost, twice, extra := 0, 0, 0
			for id := range served {
				if stored["ast_"+id] == 0 {
					lost++
				}
			}
			for id, n := range stored {
				if n > 1 {
					twice++
				}
				if !served[strings.TrimPrefix(id, "ast_")] {
					extra++
				}
			}
			if lost > 0 || twice > 0 || extra > 0 {
				t.Fatalf("%d requests served, %d rows: %d lost, %d stored twice, %d never served; syslog-ng said:\n%s",
					len(served), len(ids), lost, twice, extra, logs())
			}
			return time.Since(start)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestSyslogNGEdgeListedOnce: requests through a real nginx edge, shipped
// by a real syslog-ng to serve's ingest address with an edge key, are each
// stored exactly once, on each engine.
func TestSyslogNGEdgeListedOnce(t *testing.T) {
	nginxtest.Require(t)
	syslogngtest.Require(t)
	for _, engine := range edgeEngines {
		t.Run(engine.name, func(t *testing.T) {
			const requests, files = 500, 20
			_, edge, _ := cdnOnLoopback(t, files)
			db := engine.dsn(t)
			mustRunCmd(t, demoRegionsNDJSON(t), "ingest", "regions", "--db", db)
			key := newProjectKey(t, db, "--scope", "edge", "--region", "FRA1")
			ingestAddr := freeAddr(t)
			srv := startServe(t, nil, "--db", db, "--ingest-addr", ingestAddr)
			shipper := startEdgeShipper(t, edge.LogPath(), ingestAddr, key)

			served := load(t, edge.URL(), files, requests, func(int) {})
			took := storedOnce(t, db, served, 60*time.Second, shipper.Logs)
			t.Logf("%d requests served, stored once each %v after the last answer", len(served), took.Round(time.Millisecond))
			s, err := scrape(srv.admin)
			if err != nil {
				t.Fatal(err)
			}
			if n := s[`cdnapi_edgelog_lines_total{region="FRA1",result="taken"}`]; int(n) < len(served) {
				t.Errorf("lines taken: %v, want at least %d", n, len(served))
			}
		})
	}
}

// serveProc is `cdnapi serve` as a process of its own, to be killed.
type serveProc struct {
	t    *testing.T
	args []string
	addr string // its ingest address, to wait for
	cmd  *exec.Cmd
	logs bytes.Buffer
}

func (p *serveProc) start() {
	p.t.Helper()
	p.cmd = exec.Command(os.Args[0], append([]string{"--", "serve", "--log-format", "text", "--api-addr", "127.0.0.1:0",
		"--edge-addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0"}, p.args...)...)
	p.cmd.Env = append(os.Environ(), "CDNAPI_TEST_AS_MAIN=1")
	p.cmd.Stderr = &p.logs
	if err := p.cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", p.addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("serve did not listen on %s within 30 s: %s", p.addr, p.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (p *serveProc) kill() {
	if p.cmd == nil {
		return
	}
	p.cmd.Process.Kill()
	p.cmd.Wait()
	p.cmd = nil
}

// shipperFailure is what syslog-ng's http() logs when it cannot reach
// the ingest address.
const shipperFailure = "curl: error sending HTTP request"

// TestSyslogNGEdgeServeKilled is the drill: requests through an
// edge that ships through syslog-ng while serve is killed with SIGKILL
// twice and started again. syslog-ng buffers and sends again what was not
// acknowledged, and the assets table ends with exactly one row per request
// served. CDNAPI_KILL_REQUESTS sets the count (default 20,000).
func TestSyslogNGEdgeServeKilled(t *testing.T) {
	nginxtest.Require(t)
	syslogngtest.Require(t)
	if testing.Short() {
		t.Skip("thousands of requests through nginx and syslog-ng")
	}
	requests := 20_000
	if n, err := strconv.Atoi(os.Getenv("CDNAPI_KILL_REQUESTS")); err == nil && n > 0 {
		requests = n
	}
	for _, engine := range edgeEngines {
		t.Run(engine.name, func(t *testing.T) {
			const files = 200
			_, edge, _ := cdnOnLoopback(t, files)
			db := engine.dsn(t)
			mustRunCmd(t, demoRegionsNDJSON(t), "ingest", "regions", "--db", db)
			key := newProjectKey(t, db, "--scope", "edge", "--region", "FRA1")
			ingestAddr := freeAddr(t)
			p := &serveProc{t: t, addr: ingestAddr, args: []string{"--db", db, "--ingest-addr", ingestAddr}}
			p.start()
			defer func() { p.kill() }()
			shipper := startEdgeShipper(t, edge.LogPath(), ingestAddr, key)

			// serve stays down until syslog-ng has failed to send a batch
			// once more: its lines go to its disk buffer, to be sent again.
			down := func() {
				failed := strings.Count(shipper.Logs(), shipperFailure)
				p.kill()
				deadline := time.Now().Add(20 * time.Second)
				for strings.Count(shipper.Logs(), shipperFailure) == failed {
					if time.Now().After(deadline) {
						t.Errorf("syslog-ng did not try to send within 20 s of serve's kill:\n%s", shipper.Logs())
						return
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
			events := []struct {
				at int
				do func()
			}{
				{requests * 20 / 100, down},
				{requests * 30 / 100, p.start},
				{requests * 60 / 100, down},
				{requests * 70 / 100, p.start},
			}
			next := 0
			start := time.Now()
			served := load(t, edge.URL(), files, requests, func(sent int) {
				if next < len(events) && sent >= events[next].at {
					events[next].do()
					next++
				}
			})
			sent := time.Since(start)
			took := storedOnce(t, db, served, 120*time.Second, shipper.Logs)
			t.Logf("%d requests served in %v (serve killed twice), all stored once each %v after the last answer",
				len(served), sent.Round(time.Millisecond), took.Round(time.Millisecond))
			t.Logf("syslog-ng failed to send %d times while serve was down", strings.Count(shipper.Logs(), shipperFailure))
		})
	}
}

// TestSyslogNGStoreDown: while PostgreSQL is stopped, serve answers the
// shipper's batches 503 and acknowledges none; syslog-ng keeps them and
// sends them again, and once PostgreSQL is back every request is stored
// exactly once.
func TestSyslogNGStoreDown(t *testing.T) {
	nginxtest.Require(t)
	syslogngtest.Require(t)
	cluster := pgtest.Start(t)
	db := cluster.NewDatabase(t)
	const files = 20
	_, edge, _ := cdnOnLoopback(t, files)
	mustRunCmd(t, demoRegionsNDJSON(t), "ingest", "regions", "--db", db)
	key := newProjectKey(t, db, "--scope", "edge", "--region", "FRA1")
	ingestAddr := freeAddr(t)
	srv := startServe(t, nil, "--db", db, "--ingest-addr", ingestAddr)
	shipper := startEdgeShipper(t, edge.LogPath(), ingestAddr, key)

	served := load(t, edge.URL(), files, 200, func(int) {})
	storedOnce(t, db, served, 30*time.Second, shipper.Logs)
	metric := func(name string) float64 {
		s, err := scrape(srv.admin)
		if err != nil {
			t.Fatal(err)
		}
		return s[name]
	}
	taken := func() float64 { return metric(`cdnapi_edgelog_lines_total{region="FRA1",result="taken"}`) }
	before := taken()

	if err := cluster.Stop(); err != nil {
		t.Fatal(err)
	}
	for id := range load(t, edge.URL(), files, 300, func(int) {}) {
		served[id] = true
	}
	// serve fails to commit a batch (and answers it 503) at least twice:
	// syslog-ng sent it again. No batch is taken meanwhile.
	deadline := time.Now().Add(60 * time.Second)
	for metric(`cdnapi_edgelog_store_errors_total{region="FRA1"}`) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("serve did not fail to commit twice within 60 s of the store's stop; syslog-ng said:\n%s", shipper.Logs())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n := taken(); n != before {
		t.Errorf("%v lines taken while the store was down", n-before)
	}
	if err := cluster.Restart(); err != nil {
		t.Fatal(err)
	}
	took := storedOnce(t, db, served, 60*time.Second, shipper.Logs)
	t.Logf("%d requests stored once each, %v after the store came back", len(served), took.Round(time.Millisecond))
}

// TestSyslogNGKeyNotYetLoaded: an edge key made after serve started is
// refused (401) until serve reloads the keys; syslog-ng keeps the lines
// and sends them again, rather than drop them as it does a 4xx by
// default, and each request is then stored once.
func TestSyslogNGKeyNotYetLoaded(t *testing.T) {
	nginxtest.Require(t)
	syslogngtest.Require(t)
	const files = 20
	_, edge, _ := cdnOnLoopback(t, files)
	db := migratedDB(t, "later.db")
	mustRunCmd(t, demoRegionsNDJSON(t), "ingest", "regions", "--db", db)
	ingestAddr := freeAddr(t)
	srv := startServe(t, nil, "--db", db, "--ingest-addr", ingestAddr)
	key := newProjectKey(t, db, "--scope", "edge", "--region", "FRA1")
	shipper := startEdgeShipper(t, edge.LogPath(), ingestAddr, key)
	served := load(t, edge.URL(), files, 200, func(int) {})
	storedOnce(t, db, served, 30*time.Second, shipper.Logs)
	s, err := scrape(srv.admin)
	if err != nil {
		t.Fatal(err)
	}
	refused := s[`cdnapi_http_requests_total{code="401",listener="ingest",route="/api/v1/edge-logs"}`]
	t.Logf("%v batches refused 401 before serve loaded the key", refused)
	if refused == 0 {
		// serve reloads the keys 5 s after its start; the first batch goes
		// half a second after the first request.
		t.Error("no batch was refused: serve loaded the key before syslog-ng's first batch, and the retry of a 401 went untested")
	}
}

// TestSyslogNGShipperKilled: the shipper itself is killed with SIGKILL
// while serve is down and its disk buffer holds lines it could not send,
// and more requests are logged while it is down. Restarted, it sends what
// its buffer kept and reads the rest of the log from its persisted
// position; each request is stored exactly once (a line it sends twice is
// upserted, by its request ID, into the same row).
func TestSyslogNGShipperKilled(t *testing.T) {
	nginxtest.Require(t)
	syslogngtest.Require(t)
	const files = 20
	_, edge, _ := cdnOnLoopback(t, files)
	db := migratedDB(t, "edge.db")
	mustRunCmd(t, demoRegionsNDJSON(t), "ingest", "regions", "--db", db)
	key := newProjectKey(t, db, "--scope", "edge", "--region", "FRA1")
	ingestAddr := freeAddr(t)
	p := &serveProc{t: t, addr: ingestAddr, args: []string{"--db", db, "--ingest-addr", ingestAddr}}
	p.start()
	defer func() { p.kill() }()
	shipper := startEdgeShipper(t, edge.LogPath(), ingestAddr, key)

	served := load(t, edge.URL(), files, 200, func(int) {})
	storedOnce(t, db, served, 60*time.Second, shipper.Logs)

	// serve down: syslog-ng fails to send, and keeps the lines.
	failed := strings.Count(shipper.Logs(), shipperFailure)
	p.kill()
	for id := range load(t, edge.URL(), files, 300, func(int) {}) {
		served[id] = true
	}
	deadline := time.Now().Add(60 * time.Second) // a guard against a hang
	for strings.Count(shipper.Logs(), shipperFailure) == failed {
		if time.Now().After(deadline) {
			t.Fatalf("syslog-ng did not try to send within 60 s of serve's kill:\n%s", shipper.Logs())
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The shipper killed, and requests logged while it is down.
	shipper.Kill()
	for id := range load(t, edge.URL(), files, 200, func(int) {}) {
		served[id] = true
	}
	shipper.Start()
	p.start()
	took := storedOnce(t, db, served, 120*time.Second, shipper.Logs)
	t.Logf("%d requests stored once each, %v after serve and syslog-ng were back", len(served), took.Round(time.Millisecond))
}
