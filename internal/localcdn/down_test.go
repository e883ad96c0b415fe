package localcdn

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/cdnapi/cdnapi/internal/fleet"
)

// Down says what it stopped, what was not running and what it removed, a
// line each, last started first.
func TestDownReports(t *testing.T) {
	dir := t.TempDir()
	c := &CDN{Dir: filepath.Join(dir, "cdn"), statePath: filepath.Join(dir, "state.json")}
	if err := os.Mkdir(c.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"follow-fra1", "serve"} {
		p := &fleet.Proc{Name: name, Kind: kindFollow, Args: []string{"sleep", "600"}, Dir: dir, Log: filepath.Join(dir, name+".log")}
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
		c.Procs = append(c.Procs, p)
	}
	c.Procs[1].Kind = kindServe
	c.Procs = append([]*fleet.Proc{{Name: "edge-fra1", Kind: kindNginx}}, c.Procs...) // never started
	serve, follower := c.Procs[2].PID, c.Procs[1].PID
	var out bytes.Buffer
	if err := c.Down(&out); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("stopped serve (cdnapi, pid %d)\nstopped follow-fra1 (follow, pid %d)\nedge-fra1 (nginx) was not running\nremoved %s\n",
		serve, follower, c.Dir)
	if out.String() != want {
		t.Errorf("Down reported\n%s\nwant\n%s", out.String(), want)
	}
	if _, err := os.Stat(c.Dir); !os.IsNotExist(err) {
		t.Errorf("the directory is still there: %v", err)
	}
}
