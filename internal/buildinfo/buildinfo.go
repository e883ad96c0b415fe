// Package buildinfo says which build of cdnapi is running: the version a
// release stamped, the VCS revision and time that the Go toolchain records,
// and the Go version. It also exports that as the cdnapi_build_info metric.
package buildinfo

import (
	"cmp"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// version is stamped by release builds (scripts/release):
//
//	go build -ldflags "-X github.com/cdnapi/cdnapi/internal/buildinfo.version=v1.2.3"
//
// A plain `go build` leaves it empty; Read then falls back on the module
// version the toolchain recorded.
var version string

// Info describes a build.
type Info struct {
	// Version is the stamped release version; else the module version,
	// which is "(devel)" for a build from a checkout, or v1.2.3 for
	// `go install …@v1.2.3`.
	Version string
	// Revision is the VCS commit the binary was built from; "" when the
	// build recorded none (-buildvcs=false, or not built from a checkout).
	Revision string
	// Modified reports uncommitted changes in the checkout at build time.
	Modified bool
	// Time is the commit time of Revision. It stands for the build time:
	// a wall-clock build time would make two builds of one commit differ,
	// and releases are meant to be reproducible. Zero when unknown.
	Time time.Time
	// GoVersion is the toolchain that built the binary, e.g. go1.26.8.
	GoVersion string
	// Platform is the GOOS/GOARCH the binary runs on, e.g. linux/amd64.
	Platform string
}

// Read returns the Info of the running binary.
func Read() Info {
	bi, _ := debug.ReadBuildInfo()
	return fromBuildInfo(bi, version)
}

// fromBuildInfo combines what the toolchain recorded with the version a
// release stamped, which wins.
func fromBuildInfo(bi *debug.BuildInfo, stampedVersion string) Info {
	info := Info{Version: "(devel)", GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi != nil {
		if bi.Main.Version != "" {
			info.Version = bi.Main.Version
		}
		info.GoVersion = bi.GoVersion
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.Revision = s.Value
			case "vcs.modified":
				info.Modified = s.Value == "true"
			case "vcs.time":
				info.Time, _ = time.Parse(time.RFC3339, s.Value)
			}
		}
	}
	if stampedVersion != "" {
		info.Version = stampedVersion
	}
	info.Time = info.Time.UTC()
	return info
}

// RevisionLabel is the revision with "-dirty" when the checkout was
// modified, or "unknown": one string for logs and metric labels.
func (i Info) RevisionLabel() string {
	if i.Revision == "" {
		return "unknown"
	}
	if i.Modified {
		return i.Revision + "-dirty"
	}
	return i.Revision
}

// Print writes the Info as `cdnapi version` shows it.
func (i Info) Print(w io.Writer) {
	fmt.Fprintf(w, "cdnapi %s\n", i.Version)
	fmt.Fprintf(w, "  revision  %s\n", cmp.Or(i.Revision, "unknown"))
	fmt.Fprintf(w, "  modified  %t\n", i.Modified)
	if i.Time.IsZero() {
		fmt.Fprintf(w, "  time      unknown\n")
	} else {
		fmt.Fprintf(w, "  time      %s\n", i.Time.Format(time.RFC3339))
	}
	fmt.Fprintf(w, "  go        %s %s\n", i.GoVersion, i.Platform)
}

// Register adds the gauge cdnapi_build_info{version,revision,go_version},
// always 1, to reg: the usual Prometheus way to join a build to any other
// series of the process.
func (i Info) Register(reg prometheus.Registerer) {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "cdnapi",
		Name:      "build_info",
		Help:      "The build of cdnapi that is running; always 1.",
		ConstLabels: prometheus.Labels{
			"version":    i.Version,
			"revision":   i.RevisionLabel(),
			"go_version": i.GoVersion,
		},
	})
	g.Set(1)
	reg.MustRegister(g)
}
