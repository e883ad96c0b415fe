package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/apitest"
	"github.com/cdnapi/cdnapi/internal/pgtest"
)

// TestMetricsMove runs serve on PostgreSQL and reads /metrics as an
// operator would: the store's calls, pools, page cache, pruning and probes
// are measured, and when the database stops, the store's error counter
// rises and Storage's status gauge flips to major_outage, and back once the
// database returns.
func TestMetricsMove(t *testing.T) {
	cluster := pgtest.Start(t) // our own cluster: this test stops it
	dsn := cluster.DSN(cluster.CreateDatabase(t))
	// The demo assets span three days: a retention of one day prunes some.
	p := startChildren(t, 1, "--db", dsn, "--demo", "--asset-retention", "24h")[0]
	v := apitest.NewValidator(t)
	for range 3 { // the third is served from the page cache, which lets a page in on its second miss
		if _, _, err := fetch(t, v, p.api+"/api/v1/files?limit=5"); err != nil {
			t.Fatal(err)
		}
	}

	const (
		storageUp   = `cdnapi_component_status{component="Storage",status="operational"}`
		storageDown = `cdnapi_component_status{component="Storage",status="major_outage"}`
		storeErrors = `cdnapi_store_errors_total{engine="postgres",`
	)
	var errorsBefore float64
	eventually(t, "the metrics of a healthy process", func() error {
		m, err := scrape(p.admin)
		if err != nil {
			return err
		}
		errorsBefore = m.sum(storeErrors)
		if n := m.sum("cdnapi_build_info{"); n != 1 {
			return fmt.Errorf("cdnapi_build_info sums to %v, want one series at 1", n)
		}
		return m.want(map[string]func(float64) bool{
			storageUp:   is(1),
			storageDown: is(0),
			`cdnapi_store_call_duration_seconds_count{engine="postgres",operation="list_files"}`: atLeast(1),
			`cdnapi_store_call_duration_seconds_count{engine="postgres",operation="ping"}`:       atLeast(1),
			`cdnapi_store_pool_connections{engine="postgres",pool="primary",state="idle"}`:       atLeast(0),
			`cdnapi_store_pool_connections{engine="postgres",pool="primary",state="in_use"}`:     atLeast(0),
			`cdnapi_store_pool_max_connections{engine="postgres",pool="primary"}`:                atLeast(4),
			`cdnapi_page_cache_hits_total{listener="api"}`:                                       atLeast(1),
			`cdnapi_page_cache_misses_total{listener="api"}`:                                     atLeast(1),
			`cdnapi_prune_deleted_rows_total{engine="postgres",table="assets"}`:                  atLeast(1),
			`cdnapi_probe_duration_seconds_count{component="Storage"}`:                           atLeast(1),
			`cdnapi_http_requests_total{code="200",listener="api",route="/api/v1/files"}`:        atLeast(2),
		})
	})

	if err := cluster.Stop(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the metrics of a stopped store", func() error {
		m, err := scrape(p.admin)
		if err != nil {
			return err
		}
		if got := m.sum(storeErrors); got <= errorsBefore {
			return fmt.Errorf("store errors %v, not above the %v before the stop", got, errorsBefore)
		}
		if err := m.want(map[string]func(float64) bool{
			storageUp:   is(0),
			storageDown: is(1),
			`cdnapi_probe_failures_total{component="Storage"}`: atLeast(1),
		}); err != nil {
			return err
		}
		for name, v := range m {
			if strings.HasPrefix(name, storeErrors) {
				t.Logf("%s %v", name, v)
			}
		}
		return nil
	})

	if err := cluster.Restart(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the metrics once the store is back", func() error {
		m, err := scrape(p.admin)
		if err != nil {
			return err
		}
		return m.want(map[string]func(float64) bool{storageUp: is(1), storageDown: is(0)})
	})
}

// TestSQLitePoolMetrics checks the pool collector of a SQLite store: its
// read and write pools, with their bounds, and a connection in use while a
// transaction holds the writer.
func TestSQLitePoolMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	st := measureStore(openTestStore(t, "sqlite:"+filepath.Join(t.TempDir(), "pool.db")), reg)
	if _, err := st.ListRegions(t.Context()); err != nil {
		t.Fatal(err)
	}
	gather := func() series {
		t.Helper()
		var buf bytes.Buffer
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			if _, err := expfmt.MetricFamilyToText(&buf, f); err != nil {
				t.Fatal(err)
			}
		}
		s, err := parseSeries(buf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	const pool = `cdnapi_store_pool_connections{engine="sqlite",`
	if err := gather().want(map[string]func(float64) bool{
		`cdnapi_store_pool_max_connections{engine="sqlite",pool="read"}`:                     is(float64(max(4, runtime.NumCPU()))),
		`cdnapi_store_pool_max_connections{engine="sqlite",pool="write"}`:                    is(1),
		pool + `pool="read",state="idle"}`:                                                   atLeast(1),
		pool + `pool="write",state="in_use"}`:                                                is(0),
		`cdnapi_store_call_duration_seconds_count{engine="sqlite",operation="list_regions"}`: is(1),
	}); err != nil {
		t.Error(err)
	}
	// Inside a transaction the writer's one connection is in use.
	err := st.Write(t.Context(), func(cdnapi.Writer) error {
		return gather().want(map[string]func(float64) bool{pool + `pool="write",state="in_use"}`: is(1)})
	})
	if err != nil {
		t.Error(err)
	}
}

// series are the samples of a scrape, by name and labels as Prometheus's
// text format writes them.
type series map[string]float64

// scrape reads the metrics at the admin address.
func scrape(admin string) (series, error) {
	res, err := replicaClient.Get(admin + "/metrics")
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	return parseSeries(body)
}

// parseSeries parses metrics in Prometheus's text format.
func parseSeries(body []byte) (series, error) {
	s := series{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		i := strings.LastIndexByte(line, ' ')
		if strings.HasPrefix(line, "#") || i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("metrics line %q: %v", line, err)
		}
		s[line[:i]] = v
	}
	return s, sc.Err()
}

// sum adds the samples whose series starts with prefix.
func (s series) sum(prefix string) float64 {
	total := 0.0
	for k, v := range s {
		if strings.HasPrefix(k, prefix) {
			total += v
		}
	}
	return total
}

// want returns an error naming the first series that is missing or whose
// value fails its check.
func (s series) want(checks map[string]func(float64) bool) error {
	for name, ok := range checks {
		v, found := s[name]
		if !found {
			return fmt.Errorf("no series %s", name)
		}
		if !ok(v) {
			return fmt.Errorf("%s = %v", name, v)
		}
	}
	return nil
}

func is(want float64) func(float64) bool     { return func(v float64) bool { return v == want } }
func atLeast(min float64) func(float64) bool { return func(v float64) bool { return v >= min } }

// TestServeGCPercent checks that serve collects garbage less often than Go's
// default (see serveGCPercent), as /metrics reports it, unless GOGC says
// otherwise, and leaves the setting as it found it when it stops.
func TestServeGCPercent(t *testing.T) {
	gogc := func() float64 {
		sample := []metrics.Sample{{Name: "/gc/gogc:percent"}}
		metrics.Read(sample)
		return float64(sample[0].Value.Uint64())
	}
	before := gogc()
	db := filepath.Join(t.TempDir(), "cdnapi.db")
	for _, tc := range []struct {
		env  map[string]string
		want float64
	}{
		{nil, serveGCPercent},
		{map[string]string{"GOGC": "50"}, before}, // the runtime read GOGC at start; serve leaves it
	} {
		s := startServe(t, tc.env, "--db", db, "--demo")
		got, err := scrape(s.admin)
		if err != nil {
			t.Fatal(err)
		}
		if got["go_gc_gogc_percent"] != tc.want {
			t.Errorf("with GOGC=%q, go_gc_gogc_percent = %v, want %v", tc.env["GOGC"], got["go_gc_gogc_percent"], tc.want)
		}
		if err := s.stop(); err != nil {
			t.Fatal(err)
		}
		if after := gogc(); after != before {
			t.Errorf("after serve stopped, GOGC is %v, want %v as before", after, before)
		}
	}
}
