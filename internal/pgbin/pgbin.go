// Package pgbin finds PostgreSQL's server programs (initdb, postgres,
// pg_basebackup) and the OS user to run them as, for the code that starts
// throwaway servers: internal/pgtest for tests, internal/fleet for drills.
package pgbin

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
)

// Install is where the programs are and whom they run as.
type Install struct {
	BinDir string
	// UID and GID own the servers' directories and run the programs.
	UID, GID int
	// SwitchUser is set when we are root: PostgreSQL refuses to run as
	// root, so the programs run as the OS user postgres (UID, GID).
	SwitchUser bool
}

// Find locates the programs: the directory of initdb on PATH (following
// symlinks, as Debian links /usr/bin entries to versioned directories) if
// the server is beside it, else the newest /usr/lib/postgresql/*/bin.
func Find() (*Install, error) {
	dir, err := binDir()
	if err != nil {
		return nil, err
	}
	in := &Install{BinDir: dir, UID: os.Geteuid(), GID: os.Getegid()}
	if in.UID == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root needs the OS user postgres: %w", err)
		}
		uid, err1 := strconv.Atoi(u.Uid)
		gid, err2 := strconv.Atoi(u.Gid)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("OS user postgres: %w", err)
		}
		in.UID, in.GID, in.SwitchUser = uid, gid, true
	}
	return in, nil
}

func binDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			if dir := filepath.Dir(real); hasPrograms(dir) {
				return dir, nil
			}
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return majorVersion(dirs[i]) > majorVersion(dirs[j]) })
	for _, dir := range dirs {
		if hasPrograms(dir) {
			return dir, nil
		}
	}
	return "", errors.New("initdb and postgres not found on PATH or in /usr/lib/postgresql/*/bin")
}

// hasPrograms reports whether dir holds the programs we run.
func hasPrograms(dir string) bool {
	for _, name := range []string{"initdb", "postgres", "pg_basebackup"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.IsDir() {
			return false
		}
	}
	return true
}

// majorVersion reads the version out of /usr/lib/postgresql/<version>/bin.
func majorVersion(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}
