package fleet

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi/internal/apitest"
	"github.com/cdnapi/cdnapi/internal/pgbin"
)

// TestDrill brings a fleet up and runs the drill on it: about 110 s of load
// through haproxy while a process is killed, the fleet is rolled, the
// standby, the primary, both, Redis and the primary again are stopped in
// turn and the standby is promoted. It runs when CDNAPI_FLEET_DRILL=1, as .ci/run sets: it is too
// long for every `go test`. Without haproxy, redis-server or PostgreSQL it
// skips, except under CI=true, where it fails.
func TestDrill(t *testing.T) {
	if os.Getenv("CDNAPI_FLEET_DRILL") != "1" {
		t.Skip("the fleet drill takes ~2 minutes; CDNAPI_FLEET_DRILL=1 runs it (.ci/run sets it)")
	}
	requirePrograms(t)
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	f, err := Up(ctx, Options{Repo: repo, StatePath: filepath.Join(t.TempDir(), "fleet.json"),
		Files: 3000, Assets: 20000, RateLimit: 20, RateBurst: 20})
	if err != nil {
		t.Fatalf("fleet up: %v", err)
	}
	t.Cleanup(func() {
		if err := f.Down(); err != nil {
			t.Errorf("fleet down: %v", err)
		}
	})

	// Every tenth answer through haproxy is held to the contract: all of
	// them would cost more CPU than the fleet has on a small machine.
	v := apitest.NewValidator(t)
	var n atomic.Int64
	check := func(req *http.Request, res *http.Response, body []byte) {
		if n.Add(1)%10 == 0 {
			v.Check(t, req, res, body)
		}
	}
	rep, err := Drill(ctx, f, DrillOptions{Rate: 300, Check: check})
	if rep != nil {
		var b strings.Builder
		rep.Print(&b)
		t.Logf("the drill:\n%s", b.String())
		if err := rep.Err(); err != nil {
			t.Error(err)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
}

// requirePrograms ends t for a missing program: a skip, or under CI=true,
// where the drill must run, a failure.
func requirePrograms(t *testing.T) {
	t.Helper()
	_, err := pgbin.Find()
	for _, prog := range []string{"haproxy", "redis-server"} {
		if _, lookErr := exec.LookPath(prog); lookErr != nil && err == nil {
			err = lookErr
		}
	}
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("the fleet drill needs haproxy, redis-server and PostgreSQL when CI=true: %v", err)
	}
	t.Skipf("the fleet drill needs haproxy, redis-server and PostgreSQL: %v", err)
}
