package nginxtest

import (
	"errors"
	"net/http"
	"testing"

	"github.com/cdnapi/cdnapi/internal/nginx"
)

// recorder stands in for a testing.TB, to see how missing ends a test; it
// has only the methods missing calls.
type recorder struct {
	testing.TB
	skipped, failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Skipf(string, ...any)  { r.skipped = true }
func (r *recorder) Fatalf(string, ...any) { r.failed = true }

// TestMissing: without nginx a test skips, and under CI=true it fails.
func TestMissing(t *testing.T) {
	for _, c := range []struct {
		ci                   string
		wantSkip, wantFailed bool
	}{
		{"", true, false},
		{"false", true, false},
		{"true", false, true},
	} {
		r := &recorder{}
		missing(r, errors.New("not installed"), c.ci)
		if r.skipped != c.wantSkip || r.failed != c.wantFailed {
			t.Errorf("CI=%q: skipped %v, failed %v; want %v, %v", c.ci, r.skipped, r.failed, c.wantSkip, c.wantFailed)
		}
	}
}

// TestStartEdge: the helpers start an origin and an edge in front of it,
// and stop them when the test ends.
func TestStartEdge(t *testing.T) {
	var addr string
	t.Run("inner", func(t *testing.T) {
		origin := StartOrigin(t, t.TempDir())
		edge := StartEdge(t, nginx.Edge{Region: "FRA1", Origin: origin.URL()})
		addr = edge.Addr()
		res, err := http.Get(edge.HealthURL())
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Errorf("GET /health: %s", res.Status)
		}
	})
	if addr == "" {
		return // skipped: no nginx
	}
	if _, err := http.Get("http://" + addr + "/health"); err == nil {
		t.Errorf("the edge on %s still answers after its test ended", addr)
	}
}
