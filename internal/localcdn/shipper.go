package localcdn

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/cdnapi/cdnapi/internal/fleet"
)

// The second layout of the CDN (Options.Ship): one edge runs no follower
// and ships its log through syslog-ng, configured by the repository's
// deploy/syslog-ng/cdnapi-edge.conf, to serve's ingest address with an
// edge key of its region, as an edge on a machine of its own would.

// kindShipper is a syslog-ng shipping an edge's log.
const kindShipper = "syslog-ng"

// syslogNG returns the path of syslog-ng, or an error when it or its
// http() destination is missing.
func syslogNG() (string, error) {
	bin, err := exec.LookPath("syslog-ng")
	if err != nil {
		bin = "/usr/sbin/syslog-ng"
		if _, serr := os.Stat(bin); serr != nil {
			return "", fmt.Errorf("syslog-ng is not installed (apt-get install syslog-ng-core syslog-ng-mod-http): %w", err)
		}
	}
	if mods, _ := filepath.Glob("/usr/lib/syslog-ng/*/libhttp.so"); len(mods) == 0 {
		return "", errors.New("syslog-ng's http() destination is not installed (apt-get install syslog-ng-mod-http)")
	}
	return bin, nil
}

// createEdgeKey makes the edge key of region, before serve starts, so
// that serve's first load of the keys holds it.
func (c *CDN) createEdgeKey(ctx context.Context, region string, say func(string, ...any)) error {
	cmd := exec.CommandContext(ctx, c.bin(), "keys", "create", "--project", Project, "--scope", "edge",
		"--region", region, "--name", "scripts/cdn "+region, "--quiet", "--db", c.DB)
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("cdnapi keys create --scope edge: %w", err)
	}
	c.EdgeKey = strings.TrimSpace(string(out))
	say("edge key of %s: %s…", region, c.EdgeKey[:8])
	return c.save()
}

// startShippers starts a syslog-ng for each edge that ships its log,
// once serve's ingest address is up.
func (c *CDN) startShippers(ctx context.Context, a Addrs, say func(string, ...any)) error {
	for _, e := range c.Edges {
		if !e.Shipped {
			continue
		}
		bin, err := syslogNG()
		if err != nil {
			return err
		}
		dir := filepath.Join(c.Dir, "syslog-ng-"+e.Region)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		ctl := filepath.Join(dir, "syslog-ng.ctl")
		p := &fleet.Proc{Name: "syslog-ng-" + e.Region, Kind: kindShipper, Addr: a.Ingest, Dir: dir,
			Log: filepath.Join(dir, "syslog-ng.out"),
			Args: []string{bin, "-F", "--stderr", "--no-caps", "-f", filepath.Join(c.Repo, "deploy", "syslog-ng", "cdnapi-edge.conf"),
				"--persist-file", filepath.Join(dir, "syslog-ng.persist"), "--control", ctl,
				"--pidfile", filepath.Join(dir, "syslog-ng.pid")},
			Env: []string{"CDNAPI_EDGE_LOG=" + e.Log, "CDNAPI_INGEST_URL=http://" + a.Ingest + "/api/v1/edge-logs",
				"CDNAPI_EDGE_KEY=" + c.EdgeKey, "CDNAPI_BUFFER_DIR=" + dir}}
		say("syslog-ng ships %s's log %s to http://%s/api/v1/edge-logs", e.Region, e.Log, a.Ingest)
		if err := c.launch(ctx, p, func(context.Context) error {
			_, err := os.Stat(ctl) // its control socket: it has started
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}
