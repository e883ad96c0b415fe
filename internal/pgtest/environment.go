package pgtest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/cdnapi/cdnapi/internal/pgbin"
)

// environment is what running PostgreSQL here takes: where its programs are,
// and which OS user runs them.
type environment struct {
	binDir string              // holds initdb, postgres and pg_basebackup
	cred   *syscall.Credential // nil: run as ourselves
	uid    int                 // owner of the clusters' directories
	gid    int
}

var probed struct {
	once sync.Once
	env  *environment
	err  error
}

// requireEnvironment returns the environment, or ends tb: a skip when
// PostgreSQL is missing, a failure when CI=true.
func requireEnvironment(tb testing.TB) *environment {
	tb.Helper()
	probed.once.Do(func() { probed.env, probed.err = probeEnvironment() })
	if probed.err != nil {
		missing(tb, probed.err, os.Getenv("CI"))
	}
	return probed.env
}

// missing ends tb for the lack of PostgreSQL: PostgreSQL tests must never
// skip silently in CI, where the tests must prove both engines.
func missing(tb testing.TB, err error, ci string) {
	tb.Helper()
	if ci == "true" {
		tb.Fatalf("pgtest: PostgreSQL is required when CI=true: %v", err)
		return
	}
	tb.Skipf("pgtest: skipping, PostgreSQL is not available: %v", err)
}

// probeEnvironment finds the PostgreSQL programs and the user to run them as.
func probeEnvironment() (*environment, error) {
	in, err := pgbin.Find()
	if err != nil {
		return nil, err
	}
	env := &environment{binDir: in.BinDir, uid: in.UID, gid: in.GID}
	if in.SwitchUser { // postgres and initdb refuse to run as root
		env.cred = &syscall.Credential{Uid: uint32(in.UID), Gid: uint32(in.GID)}
	}
	return env, nil
}

// makeDir creates a directory that the server's user owns, with mode 0700 as
// initdb demands. It lives in os.TempDir, not in a t.TempDir: those are
// private to root and would shut the postgres user out.
func (env *environment) makeDir(prefix string) (string, error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", err
	}
	if err := os.Chown(dir, env.uid, env.gid); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// initdb creates a cluster in dataDir. The default collation is ICU's en-US
// where the build has ICU, as on most production servers: the schema must
// not rely on the database's collation for its byte-ordered ids, and a
// C-collated test cluster could not tell.
func (env *environment) initdb(dataDir string) error {
	args := []string{
		"-D", dataDir,
		"-U", "postgres",
		"--auth=trust",
		"--encoding=UTF8",
		"--locale=C",
		"--no-sync", // throwaway: nothing to make durable
	}
	err := env.run("initdb", append(args, "--locale-provider=icu", "--icu-locale=en-US")...)
	if err != nil {
		// Builds without ICU refuse the provider; a partial directory
		// would make the retry fail.
		if rmErr := os.RemoveAll(dataDir); rmErr != nil {
			return rmErr
		}
		err = env.run("initdb", args...)
	}
	return err
}

// run runs a PostgreSQL program to completion as the server's user.
func (env *environment) run(name string, args ...string) error {
	cmd := env.command(name, args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", name, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// command prepares a PostgreSQL program to run as the server's user, with
// the PG* variables of our environment removed so that none of them points
// it at another server.
func (env *environment) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(env.binDir, name), args...)
	cmd.Env = []string{"LC_ALL=C", "TZ=UTC"}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") && !strings.HasPrefix(kv, "LC_") && !strings.HasPrefix(kv, "TZ=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Dir = os.TempDir() // the server's user may not enter our working directory
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: env.cred}
	return cmd
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
