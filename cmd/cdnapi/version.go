package main

import (
	"context"

	"github.com/cdnapi/cdnapi/internal/buildinfo"
)

const versionSynopsis = `version

Prints the version of this build, the VCS revision it was built from and
whether the checkout had uncommitted changes, the commit time, and the Go
toolchain. A release build (scripts/release) stamps the version; a build
from a checkout shows (devel). Also: cdnapi --version.`

func runVersion(ctx context.Context, env *environment, args []string) error {
	fs := newFlagSet("version", versionSynopsis, env.stdout)
	if err := parseFlags(fs, args, env.getenv); err != nil {
		return err
	}
	buildinfo.Read().Print(env.stdout)
	return nil
}
