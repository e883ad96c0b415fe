package fleet

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5"

	"github.com/cdnapi/cdnapi/internal/pgbin"
)

// pgEnv says where PostgreSQL's programs are and whom they run as. It is
// not internal/pgtest, which is bound to testing.TB and to child processes
// that die with their parent: the fleet's servers must outlive the command
// that started them.
type pgEnv struct {
	binDir   string
	uid, gid int // 0 when we are not root
}

// findPostgres locates PostgreSQL's programs and the user to run them as.
func findPostgres() (*pgEnv, error) {
	in, err := pgbin.Find()
	if err != nil {
		return nil, err
	}
	env := &pgEnv{binDir: in.BinDir}
	if in.SwitchUser {
		env.uid, env.gid = in.UID, in.GID
	}
	return env, nil
}

// pgSettings trade durability, which a throwaway fleet does not need, for
// speed; wal_keep_size lets a standby that was stopped for the drill catch
// up from the primary's WAL when it returns.
var pgSettings = []string{
	"listen_addresses=127.0.0.1",
	"fsync=off",
	"full_page_writes=off",
	"synchronous_commit=off",
	"max_connections=100",
	"wal_keep_size=256MB",
	"log_min_messages=warning",
	"log_timezone=UTC",
}

// mkdir creates a directory that the server's user owns, mode 0700 as
// PostgreSQL demands.
func (env *pgEnv) mkdir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	return os.Chown(dir, env.uid, env.gid)
}

// run runs a PostgreSQL program to completion as the server's user.
func (env *pgEnv) run(name string, args ...string) error {
	cmd := exec.Command(filepath.Join(env.binDir, name), args...)
	cmd.Env = []string{"LC_ALL=C", "TZ=UTC", "PATH=" + os.Getenv("PATH")}
	cmd.Dir = os.TempDir() // the server's user may not enter our working directory
	if env.uid != 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{
			Credential: &syscall.Credential{Uid: uint32(env.uid), Gid: uint32(env.gid)},
		}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", name, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// server returns the Proc of a postgres server on the cluster in dir
// (dir/data), listening on port and on a socket in dir.
func (env *pgEnv) server(name, dir string, port int) *Proc {
	args := []string{filepath.Join(env.binDir, "postgres"),
		"-D", filepath.Join(dir, "data"), "-p", strconv.Itoa(port), "-k", dir}
	for _, s := range pgSettings {
		args = append(args, "-c", s)
	}
	return &Proc{
		Name: name, Kind: "postgres", Addr: fmt.Sprintf("127.0.0.1:%d", port),
		Args: args, Env: []string{"LC_ALL=C", "TZ=UTC"}, Dir: dir,
		Log: filepath.Join(dir, "server.log"), UID: env.uid, GID: env.gid,
	}
}

// initPrimary creates a cluster in dir and returns its (stopped) server.
func (env *pgEnv) initPrimary(dir string, port int) (*Proc, error) {
	if err := env.mkdir(dir); err != nil {
		return nil, err
	}
	err := env.run("initdb", "-D", filepath.Join(dir, "data"), "-U", "postgres",
		"--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync")
	if err != nil {
		return nil, err
	}
	return env.server("primary", dir, port), nil
}

// initStandby takes a base backup of the primary at primaryPort into dir,
// with -R so that it starts as a streaming hot standby, and returns its
// (stopped) server.
func (env *pgEnv) initStandby(dir string, port, primaryPort int) (*Proc, error) {
	if err := env.mkdir(dir); err != nil {
		return nil, err
	}
	err := env.run("pg_basebackup", "-h", "127.0.0.1", "-p", strconv.Itoa(primaryPort), "-U", "postgres",
		"-D", filepath.Join(dir, "data"), "-R", "-X", "stream", "-c", "fast", "--no-sync")
	if err != nil {
		return nil, err
	}
	return env.server("standby", dir, port), nil
}

// pgDSN returns the URL of database db on the server at addr.
func pgDSN(addr, db string) string {
	return fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable&connect_timeout=2", addr, db)
}

// pgExec runs one statement over a short-lived connection.
func pgExec(ctx context.Context, dsn, sql string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, sql)
	return err
}

// pgQueryBool runs a one-value query over a short-lived connection.
func pgQueryBool(ctx context.Context, dsn, sql string) (bool, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return false, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var v bool
	err = conn.QueryRow(ctx, sql).Scan(&v)
	return v, err
}

// waitPostgres polls until the server p accepts a connection.
func waitPostgres(ctx context.Context, p *Proc) error {
	return poll(ctx, p, func() error {
		conn, err := pgx.Connect(ctx, pgDSN(p.Addr, "postgres"))
		if err == nil {
			conn.Close(ctx)
		}
		return err
	})
}
