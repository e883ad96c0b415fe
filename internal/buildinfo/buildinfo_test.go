package buildinfo

import (
	"bytes"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestFromBuildInfo(t *testing.T) {
	const rev = "3f80258aa1b2c3d4e5f60718293a4b5c6d7e8f90"
	checkout := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/cdnapi/cdnapi", Version: "(devel)"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: rev},
			{Key: "vcs.time", Value: "2026-11-23T09:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	installed := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.4.0"}}
	tests := []struct {
		name      string
		bi        *debug.BuildInfo
		stamped   string
		want      Info
		wantLabel string
	}{
		{"checkout", checkout, "",
			Info{Version: "(devel)", Revision: rev, Modified: true, Time: time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC), GoVersion: "go1.26.8"},
			rev + "-dirty"},
		{"release stamp wins", checkout, "v1.5.0",
			Info{Version: "v1.5.0", Revision: rev, Modified: true, Time: time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC), GoVersion: "go1.26.8"},
			rev + "-dirty"},
		{"go install at a version, no VCS", installed, "",
			Info{Version: "v1.4.0", GoVersion: "go1.26.8"}, "unknown"},
		{"no build info", nil, "",
			Info{Version: "(devel)"}, "unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := fromBuildInfo(tt.bi, tt.stamped)
			if tt.bi == nil {
				tt.want.GoVersion = got.GoVersion // the runtime's, whatever it is
			}
			tt.want.Platform = got.Platform
			if got != tt.want {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
			if got.GoVersion == "" || !strings.Contains(got.Platform, "/") {
				t.Errorf("go version %q, platform %q: want both set", got.GoVersion, got.Platform)
			}
			if l := got.RevisionLabel(); l != tt.wantLabel {
				t.Errorf("RevisionLabel = %q, want %q", l, tt.wantLabel)
			}
		})
	}
}

func TestPrint(t *testing.T) {
	var b bytes.Buffer
	Info{Version: "v1.5.0", Revision: "abc", Time: time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC),
		GoVersion: "go1.26.8", Platform: "linux/arm64"}.Print(&b)
	want := `cdnapi v1.5.0
  revision  abc
  modified  false
  time      2026-11-24T09:00:00Z
  go        go1.26.8 linux/arm64
`
	if b.String() != want {
		t.Errorf("Print wrote\n%s\nwant\n%s", b.String(), want)
	}
}

func TestRegister(t *testing.T) {
	reg := prometheus.NewRegistry()
	Info{Version: "v1.5.0", Revision: "abc", Modified: true, GoVersion: "go1.26.8"}.Register(reg)
	want := `# HELP cdnapi_build_info The build of cdnapi that is running; always 1.
# TYPE cdnapi_build_info gauge
cdnapi_build_info{go_version="go1.26.8",revision="abc-dirty",version="v1.5.0"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "cdnapi_build_info"); err != nil {
		t.Error(err)
	}
}
