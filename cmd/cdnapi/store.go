package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/postgres"
	"github.com/cdnapi/cdnapi/internal/sqlite"
)

// defaultDSN is the embedded default: a SQLite file in the working directory.
const defaultDSN = "sqlite:cdnapi.db"

// store is what every command holds: either engine, or serve's measured
// one.
type store = cdnapi.Engine

// storeUse is what a command does with its store, which tunes it.
type storeUse int

const (
	// fewWrites is a command that writes a few rows, if any: an
	// operator's command.
	fewWrites storeUse = iota
	// bulkWrites is a command that writes many rows in each transaction:
	// ingest, seed, follow, origin sync, prune, migrate. On SQLite its
	// writer keeps a large page cache (sqlite.BulkWriterCacheKiB).
	bulkWrites
	// serving is serve: few writes (the pruner's batches are small), and
	// the flags of a replica.
	serving
)

// storeFlags are the flags that choose and tune the store.
type storeFlags struct {
	dsn      *string
	readDSN  *string // nil for commands that only write
	maxConns *int
	bulk     bool         // see bulkWrites
	logger   *slog.Logger // nil discards the store's own log lines
}

// addStoreFlags registers --db on fs and, for serve, --db-read and
// --db-max-conns.
func addStoreFlags(fs *flag.FlagSet, use storeUse) storeFlags {
	f := storeFlags{
		dsn:  fs.String("db", defaultDSN, "database: sqlite:PATH, a bare PATH, postgres://… or host=… dbname=… (libpq's keywords)"),
		bulk: use == bulkWrites,
	}
	if use == serving {
		f.readDSN = fs.String("db-read", "", "PostgreSQL read replica that serves the lists while it answers, the --db primary while it does not (optional; writes and the cursor secret use --db)")
		f.maxConns = fs.Int("db-max-conns", 0, "PostgreSQL: most connections per pool (default: max(4, CPUs))")
	}
	return f
}

// open opens the existing database the flags name: "sqlite:PATH" or a bare
// PATH for SQLite, a postgres:// URL or libpq's keywords (host=… dbname=…)
// for PostgreSQL. It refuses a SQLite file that does not exist rather than
// create an empty database in its place: only serve, seed and migrate
// create one (see create).
func (f storeFlags) open(ctx context.Context) (store, error) {
	return f.openDB(ctx, nil)
}

// create is open for the commands that may create a SQLite database (serve,
// seed, migrate): it creates a missing file, in a directory that exists,
// and calls created with its absolute path.
func (f storeFlags) create(ctx context.Context, created func(path string)) (store, error) {
	return f.openDB(ctx, created)
}

// openDB is open when created is nil, else create.
func (f storeFlags) openDB(ctx context.Context, created func(path string)) (store, error) {
	dsn := *f.dsn
	var readDSN string
	var maxConns int
	if f.readDSN != nil {
		readDSN, maxConns = *f.readDSN, *f.maxConns
	}
	if isPostgres(dsn) {
		if readDSN != "" && !isPostgres(readDSN) {
			return nil, usageError{"--db-read must be a postgres:// URL or libpq's keywords (host=… dbname=…)"}
		}
		if maxConns < 0 || maxConns > 1<<15 {
			return nil, usageError{"--db-max-conns must be from 0 to 32768"}
		}
		st, err := postgres.Open(ctx, dsn, postgres.Options{ReadDSN: readDSN, MaxConns: int32(maxConns), Logger: f.logger})
		if err != nil {
			return nil, usageError{fmt.Sprintf("--db: %v", err)}
		}
		return st, nil
	}
	if readDSN != "" {
		return nil, usageError{"--db-read needs a PostgreSQL --db; SQLite has no replicas"}
	}
	if err := f.checkNotDirectory(); err != nil {
		return nil, err
	}
	path, err := sqlitePath(dsn)
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("--db %s: %w", dsn, err)
	}
	_, err = os.Stat(abs)
	isNew := errors.Is(err, fs.ErrNotExist)
	switch {
	case isNew && created == nil:
		return nil, usageError{fmt.Sprintf("no database at %s (--db %s); give --db the path of an existing database, or create one with cdnapi migrate --db %s", abs, dsn, dsn)}
	case isNew:
		if err := dirExists(filepath.Dir(abs)); err != nil {
			return nil, usageError{fmt.Sprintf("--db %s: %v", dsn, err)}
		}
	case err != nil:
		return nil, fmt.Errorf("--db %s: %w", dsn, err)
	}
	var opts sqlite.Options
	if f.bulk {
		opts.WriterCacheKiB = sqlite.BulkWriterCacheKiB
	}
	st, err := sqlite.Open(ctx, path, opts)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dsn, err)
	}
	if isNew {
		created(abs)
	}
	return st, nil
}

// sqlitePath returns the file a SQLite DSN names. A bare path must not hold
// '=' or white space, which are far likelier a PostgreSQL DSN mistyped
// than a file name; "sqlite:PATH" takes any path.
func sqlitePath(dsn string) (string, error) {
	path, prefixed := strings.CutPrefix(dsn, "sqlite:")
	switch {
	case path == "":
		return "", usageError{"--db: give sqlite:PATH, a file path, postgres://… or host=… dbname=…"}
	case prefixed:
		return path, nil
	case strings.Contains(path, "://"):
		return "", usageError{fmt.Sprintf("--db: unknown scheme %q; use sqlite:PATH, postgres://… or host=… dbname=…", path[:strings.Index(path, "://")])}
	case strings.ContainsFunc(path, func(r rune) bool { return r == '=' || unicode.IsSpace(r) }):
		return "", usageError{fmt.Sprintf("--db %q: not a PostgreSQL DSN (its first keyword is not one of libpq's, such as host= or dbname=), "+
			"and a SQLite path with '=' or spaces must be written sqlite:PATH", redactDSN(dsn))}
	}
	return path, nil
}

// checkNotDirectory refuses a SQLite --db that is a directory, in one line
// that suggests a file in it. Commands call it before any work, as open
// does; a PostgreSQL DSN passes.
func (f storeFlags) checkNotDirectory() error {
	if isPostgres(*f.dsn) {
		return nil
	}
	path, err := sqlitePath(*f.dsn)
	if err != nil {
		return err
	}
	if abs, ok := isDirectory(path); ok {
		return usageError{fmt.Sprintf("--db %s: %s is a directory; give the path of a database file, such as %s",
			*f.dsn, abs, filepath.Join(abs, "cdnapi.db"))}
	}
	return nil
}

// isDirectory reports whether path is a directory, with its absolute path
// for the message that refuses it where a file goes.
func isDirectory(path string) (abs string, ok bool) {
	fi, err := os.Stat(path)
	if err != nil || !fi.IsDir() {
		return "", false
	}
	if abs, err = filepath.Abs(path); err != nil {
		abs = path
	}
	return abs, true
}

// dirExists returns nil if dir is a directory, and otherwise an error that
// names the directory that is missing.
func dirExists(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("the directory %s does not exist; create it first", dir)
	case err != nil:
		return err
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	}
	return nil
}

// openMigrated opens the existing database the flags name and brings its
// schema up to date, as every command but migrate, serve and seed does
// before its work.
func (f storeFlags) openMigrated(ctx context.Context) (store, error) {
	return f.migrated(ctx, nil)
}

// createMigrated is openMigrated for serve and seed, which may create a
// SQLite database (see create).
func (f storeFlags) createMigrated(ctx context.Context, created func(path string)) (store, error) {
	return f.migrated(ctx, created)
}

func (f storeFlags) migrated(ctx context.Context, created func(path string)) (store, error) {
	st, err := f.openDB(ctx, created)
	if err != nil {
		return nil, err
	}
	if err := st.Migrate(ctx); err != nil {
		st.Close()
		return nil, schemaError(*f.dsn, err)
	}
	return st, nil
}

// schemaError is the error of bringing dsn's schema up to date: one line
// with the cause alone when the database cannot be reached at all, else
// the error with the database it came from. Only the migrate command
// calls it "migrate"; serve and the others say what they were doing.
func schemaError(dsn string, err error) error {
	if line, ok := postgres.ConnectFailure(err); ok {
		return errors.New(line)
	}
	return fmt.Errorf("bring the schema of %s up to date: %w", redactDSN(dsn), err)
}

// pgKeywords are libpq's connection keywords: a DSN whose first word is one
// of them, followed by '=', is PostgreSQL's keyword form, which pgx parses.
var pgKeywords = map[string]bool{
	"host": true, "hostaddr": true, "port": true, "dbname": true, "user": true, "password": true,
	"passfile": true, "connect_timeout": true, "options": true, "application_name": true,
	"sslmode": true, "sslcert": true, "sslkey": true, "sslrootcert": true, "sslpassword": true,
	"sslnegotiation": true, "service": true, "servicefile": true, "target_session_attrs": true,
	"channel_binding": true, "krbsrvname": true, "gssencmode": true, "require_auth": true,
}

// isPostgres reports whether dsn names a PostgreSQL database: a
// postgres:// or postgresql:// URL, or libpq's keyword form.
func isPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") || isPGKeywords(dsn)
}

// isPGKeywords reports whether dsn starts with one of libpq's keywords and
// '=', as in "host=127.0.0.1 dbname=cdnapi".
func isPGKeywords(dsn string) bool {
	key, _, ok := strings.Cut(strings.TrimLeftFunc(dsn, unicode.IsSpace), "=")
	return ok && pgKeywords[strings.TrimSpace(key)]
}

// pgPassword matches the value of a password in libpq's keyword form: a
// word, or a quoted string with backslash escapes.
var pgPassword = regexp.MustCompile(`(?i)\b((?:ssl)?password)\s*=\s*('(?:[^'\\]|\\.)*'|\S*)`)

// redactDSN returns dsn without a password, for messages and logs: the
// password of its user part and the password and sslpassword parameters,
// which libpq and pgx also read, become "xxxxx". A DSN that does not parse
// is shown as its scheme only, since where its password is cannot be told.
func redactDSN(dsn string) string {
	if !isPostgres(dsn) {
		return dsn // a SQLite path holds no password
	}
	if isPGKeywords(dsn) {
		return pgPassword.ReplaceAllString(dsn, "${1}=xxxxx")
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return dsn[:strings.Index(dsn, "://")] + "://…"
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	q := u.Query()
	for _, k := range []string{"password", "sslpassword"} {
		if q.Has(k) {
			q.Set(k, "xxxxx")
			u.RawQuery = q.Encode()
		}
	}
	return u.String()
}

// describeDB names the database a DSN opens, for serve's first log line:
// a SQLite file's absolute path, or PostgreSQL's host, port and database,
// never a password.
func describeDB(dsn string) string {
	if !isPostgres(dsn) {
		path, err := sqlitePath(dsn)
		if err != nil {
			return redactDSN(dsn)
		}
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
		return "sqlite " + path
	}
	host, port, dbname := "", "", ""
	if isPGKeywords(dsn) {
		for _, m := range pgKeyword.FindAllStringSubmatch(dsn, -1) {
			v := strings.Trim(m[2], "'")
			switch strings.ToLower(m[1]) {
			case "host":
				host = v
			case "port":
				port = v
			case "dbname":
				dbname = v
			}
		}
	} else if u, err := url.Parse(dsn); err == nil {
		host, port, dbname = u.Hostname(), u.Port(), strings.TrimPrefix(u.Path, "/")
	}
	return fmt.Sprintf("postgres host=%s port=%s dbname=%s", orDefault(host, "(default)"), orDefault(port, "5432"), orDefault(dbname, "(the user's)"))
}

// pgKeyword matches one keyword=value pair of libpq's keyword form.
var pgKeyword = regexp.MustCompile(`(\w+)\s*=\s*('(?:[^'\\]|\\.)*'|\S*)`)

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
