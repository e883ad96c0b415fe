package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/auth"
)

const keysSynopsis = `keys create --project NAME [--scope read|upload|edge [--region CODE]] [--name LABEL] [--expires-in DURATION] [--quiet] | list [--project NAME] | revoke ID|KEY  [--db DSN]

API keys authenticate requests when serve runs with --auth required. A
key belongs to one project and has a scope: read (the default) lists the
project's files, regions and assets; upload writes into the project's
origin through the upload service; edge sends one region's edge log lines
to the ingest address, and is bound to that region by --region (required
for edge, refused for the others). A key does nothing its scope does not name. create
prints the new key, once, alone on stdout: the store keeps only its
SHA-256 hash. A key revoked or expired is
refused by every serving process within 5 seconds. list shows each key's
first characters (PREFIX, such as cdk_AbC9…), so that a key found in a log
can be matched to its ID; revoke takes the ID, or the key itself.`

// keysSynopses are the help of each verb of keys that has flags of its own.
var keysSynopses = map[string]string{
	"create": `keys create --project NAME [--scope read|upload|edge] [--name LABEL] [--expires-in DURATION] [--quiet]  [--db DSN]

Creates an API key of project NAME and prints it, once, alone on stdout: the
store keeps only its SHA-256 hash. Its scope says what it may do: read (the
default) lists the project's files, regions and assets; upload writes into
the project's origin through the upload service; edge sends one region's
edge log lines to the ingest address. Keep it, as in
KEY=$(cdnapi keys create --project default). --quiet leaves out the warning
that the project holds no files yet.`,
	"list": `keys list [--project NAME]  [--db DSN]

Lists every key (or the project's): its ID, its first characters (PREFIX,
such as cdk_AbC9…), so that a key found in a log can be matched to its ID,
its project, scope and name, and when it was created, expires, was last
used and was revoked.`,
	"revoke": `keys revoke ID|KEY  [--db DSN]

Revokes a key, given by its ID or by the key itself. Every serving process
refuses it within 5 seconds.`,
}

// keysConfig is what keys' arguments and their CDNAPI_* variables say.
type keysConfig struct {
	verb      string // create, list or revoke
	arg       string // revoke's key ID, or the key itself
	project   string
	scope     cdnapi.KeyScope
	region    string // edge: the one region whose lines the key may send
	label     string
	expiresIn time.Duration
	quiet     bool
	db        storeFlags
}

// parseKeysConfig parses keys' arguments and checks the words before
// anything is opened, so that a typo never reaches the database.
func parseKeysConfig(env *environment, args []string) (keysConfig, error) {
	var c keysConfig
	fs := newSubcommandFlagSet("keys", keysSynopsis, keysSynopses, args, env.stdout)
	c.db = addStoreFlags(fs, fewWrites)
	fs.StringVar(&c.project, "project", "", "create: the project of the key (required); list: show only this project's keys")
	scope := fs.String("scope", string(cdnapi.ScopeRead), "create: what the key may do: read (list files, regions and assets), upload or edge")
	fs.StringVar(&c.region, "region", "", "create: with --scope edge (and only then), the region whose lines the key may send, such as FRA1")
	fs.StringVar(&c.label, "name", "", "create: a label for the key, such as who holds it")
	fs.DurationVar(&c.expiresIn, "expires-in", 0, "create: how long the key is valid, e.g. 720h (default: until revoked)")
	fs.BoolVar(&c.quiet, "quiet", false, "create: no warning when the project holds no files")
	args, err := parseArgs(fs, args, env.getenv)
	if err != nil {
		return c, err
	}
	switch {
	case len(args) == 1 && args[0] == "create":
		if c.project == "" {
			return c, usageError{"keys create: --project is required: the project whose files the key reads (e.g. --project default)"}
		}
		if !cdnapi.ValidProject(c.project) {
			return c, usageError{"keys create: --project: want 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit"}
		}
		if cdnapi.ReservedProject(c.project) {
			return c, usageError{fmt.Sprintf("keys create: --project %s is reserved for serve's upload canary, which makes its own key; choose another project", c.project)}
		}
		c.scope = cdnapi.KeyScope(*scope)
		if !c.scope.Valid() {
			return c, usageError{fmt.Sprintf("keys create: --scope must be %s, not %q", scopeChoices(), *scope)}
		}
		if msg := cdnapi.CheckKeyRegion(c.scope, c.region); msg != "" {
			return c, usageError{"keys create: --region: " + msg}
		}
		if c.expiresIn < 0 {
			return c, usageError{"keys create: --expires-in must not be negative"}
		}
	case len(args) == 1 && args[0] == "list":
	case len(args) == 2 && args[0] == "revoke":
		c.arg = args[1]
		if !strings.HasPrefix(c.arg, auth.IDPrefix) && !auth.WellFormed(c.arg) {
			return c, usageError{fmt.Sprintf("keys revoke: want a key ID (%s…, see cdnapi keys list) or the key itself (%s…)", auth.IDPrefix, auth.KeyPrefix)}
		}
	default:
		return c, usageError{"keys: want create --project NAME, list or revoke ID (see cdnapi keys --help)"}
	}
	c.verb = args[0]
	return c, nil
}

// runKeys is the keys command: it checks the words, then opens the store
// and runs the verb.
func runKeys(ctx context.Context, env *environment, args []string) error {
	cfg, err := parseKeysConfig(env, args)
	if err != nil {
		return err
	}
	st, err := cfg.db.openMigrated(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	now := time.Now()
	switch cfg.verb {
	case "create":
		return createKey(ctx, env, st, cfg, now)
	case "revoke":
		return revokeKey(ctx, env, st, cfg.arg, now)
	}
	keys, err := st.APIKeys(ctx, cfg.project)
	if err != nil {
		return fmt.Errorf("keys list: %w", err)
	}
	printKeys(env, keys, now)
	return nil
}

// createKey makes a key as cfg says, stores its hash and prints the key,
// this once.
func createKey(ctx context.Context, env *environment, st store, cfg keysConfig, now time.Time) error {
	var expires time.Time
	if cfg.expiresIn > 0 {
		expires = now.Add(cfg.expiresIn)
	}
	key, rec := auth.NewKey(cfg.project, cfg.scope, cfg.label, now, expires)
	rec.Region = cfg.region
	if err := st.CreateKey(ctx, rec); err != nil {
		return fmt.Errorf("keys create: %w", err)
	}
	fmt.Fprintln(env.stdout, key)
	scope := string(rec.Scope)
	if rec.Region != "" {
		scope += " of region " + rec.Region
	}
	fmt.Fprintf(env.stderr, "created %s for project %s, scope %s; the key, printed on standard output, is shown only once: keep it\n", rec.ID, rec.Project, scope)
	// An edge key sends assets, which belong to regions, not to projects:
	// its project's files say nothing about it.
	if !cfg.quiet && rec.Scope != cdnapi.ScopeEdge {
		warnEmptyProject(ctx, env, st, rec.Project)
	}
	return nil
}

// scopeChoices names the valid scopes for a usage message: "read, upload
// or edge".
func scopeChoices() string {
	var b strings.Builder
	for i, s := range cdnapi.KeyScopes {
		switch {
		case i == len(cdnapi.KeyScopes)-1:
			b.WriteString(" or ")
		case i > 0:
			b.WriteString(", ")
		}
		b.WriteString(string(s))
	}
	return b.String()
}

// revokeKey revokes the key that arg names, by its ID or as itself.
func revokeKey(ctx context.Context, env *environment, st cdnapi.KeyStore, arg string, now time.Time) error {
	id, err := keyID(ctx, st, arg)
	if err != nil {
		return err
	}
	if err := st.RevokeKey(ctx, id, now); errors.Is(err, cdnapi.ErrNotFound) {
		return fmt.Errorf("keys revoke: there is no key %s (see cdnapi keys list)", id)
	} else if err != nil {
		return fmt.Errorf("keys revoke: %w", err)
	}
	fmt.Fprintf(env.stdout, "revoked %s; serving processes refuse it within %v\n", id, auth.DefaultRefreshInterval)
	return nil
}

// warnEmptyProject warns on stderr when project holds no files: projects
// are case-sensitive, and a key made for "Acme" where the files are in
// "acme" lists nothing, which must not pass for success. It only warns, as
// a project may be filled after its first key is made.
func warnEmptyProject(ctx context.Context, env *environment, st cdnapi.ListReader, project string) {
	files, err := st.ListFiles(ctx, cdnapi.FileQuery{Project: project, Limit: 1})
	if err != nil || len(files) > 0 {
		return // a store that cannot tell is no reason to warn
	}
	fmt.Fprintf(env.stderr, "warning: project %s holds no files yet, so the key lists nothing; "+
		"project names are case-sensitive: check the spelling (--quiet silences this)\n", project)
}

// keyID returns the ID of the key that arg names: arg itself when it is an
// ID, else the ID of the key whose hash is arg's. The key itself is never
// printed: it may be a live secret pasted from a leak.
func keyID(ctx context.Context, st cdnapi.KeyStore, arg string) (string, error) {
	if strings.HasPrefix(arg, auth.IDPrefix) {
		return arg, nil
	}
	keys, err := st.APIKeys(ctx, "")
	if err != nil {
		return "", fmt.Errorf("keys revoke: %w", err)
	}
	hash := auth.Hash(arg)
	for _, k := range keys {
		if k.Hash == hash {
			return k.ID, nil
		}
	}
	return "", fmt.Errorf("keys revoke: no key of this database is %s… (see cdnapi keys list)", arg[:len(auth.KeyPrefix)+auth.ShownChars])
}

// printKeys shows keys as a table, never their hashes; a key's first
// characters only (PREFIX), which give away 24 of its 190 bits.
func printKeys(env *environment, keys []cdnapi.APIKey, now time.Time) {
	tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tPREFIX\tPROJECT\tSCOPE\tREGION\tNAME\tCREATED\tEXPIRES\tLAST USED\tREVOKED")
	for _, k := range keys {
		label := "-"
		if k.Label != "" {
			label = strconv.Quote(k.Label) // a label may hold tabs or spaces
		}
		expires := orDash(k.ExpiresAt, "never")
		if !k.ExpiresAt.IsZero() && !now.Before(k.ExpiresAt) {
			expires += " (expired)"
		}
		prefix := "-" // a key made before prefixes were kept
		if k.Prefix != "" {
			prefix = k.Prefix + "…"
		}
		used := k.LastUsed
		if !used.IsZero() && used.Before(k.CreatedAt) {
			// Uses are recorded by the minute; a key created at 10:30:45
			// and used at once was not used at 10:30:00. The verifier now
			// records no earlier than the creation; older rows may hold it.
			used = k.CreatedAt
		}
		region := "-"
		if k.Region != "" {
			region = k.Region
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, prefix, k.Project, k.Scope.OrRead(), region, label,
			cdnapi.Timestamp(k.CreatedAt), expires, orDash(used, "never"), orDash(k.RevokedAt, "-"))
	}
	tw.Flush()
}

// orDash formats t, or none for the zero time.
func orDash(t time.Time, none string) string {
	if t.IsZero() {
		return none
	}
	return cdnapi.Timestamp(t)
}
