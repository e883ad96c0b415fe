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

const keysSynopsis = `keys create --project NAME [--name LABEL] [--expires-in DURATION] | list [--project NAME] | revoke ID|KEY  [--db DSN]

API keys authenticate requests when serve runs with --auth required; a key
lists the files of its project. create prints the new key, once, alone on
stdout: the store keeps only its SHA-256 hash. A key revoked or expired is
refused by every serving process within 5 seconds. list shows each key's
first characters (PREFIX, such as cdk_AbC9…), so that a key found in a log
can be matched to its ID; revoke takes the ID, or the key itself.`

func runKeys(ctx context.Context, env *environment, args []string) error {
	fs := newFlagSet("keys", keysSynopsis, env.stdout)
	db := addStoreFlags(fs, false)
	project := fs.String("project", "", "create: the project of the key (required); list: show only this project's keys")
	label := fs.String("name", "", "create: a label for the key, such as who holds it")
	expiresIn := fs.Duration("expires-in", 0, "create: how long the key is valid, e.g. 720h (default: until revoked)")
	args, err := parseArgs(fs, args, env.getenv)
	if err != nil {
		return err
	}
	// Check the words before anything is opened, so that a typo never
	// reaches the database.
	switch {
	case len(args) == 1 && args[0] == "create":
		if !cdnapi.ValidProject(*project) {
			return usageError{"keys create: --project: want 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit"}
		}
		if *expiresIn < 0 {
			return usageError{"keys create: --expires-in must not be negative"}
		}
	case len(args) == 1 && args[0] == "list":
	case len(args) == 2 && args[0] == "revoke":
		if !strings.HasPrefix(args[1], auth.IDPrefix) && !auth.WellFormed(args[1]) {
			return usageError{fmt.Sprintf("keys revoke: want a key ID (%s…, see cdnapi keys list) or the key itself (%s…)", auth.IDPrefix, auth.KeyPrefix)}
		}
	default:
		return usageError{"keys: want create --project NAME, list or revoke ID (see cdnapi keys --help)"}
	}
	st, err := db.openMigrated(ctx)
	if err != nil {
		return err
	}
	defer st.Close()

	now := time.Now()
	switch args[0] {
	case "create":
		var expires time.Time
		if *expiresIn > 0 {
			expires = now.Add(*expiresIn)
		}
		key, rec := auth.NewKey(*project, *label, now, expires)
		if err := st.CreateKey(ctx, rec); err != nil {
			return fmt.Errorf("keys create: %w", err)
		}
		fmt.Fprintln(env.stdout, key)
		fmt.Fprintf(env.stderr, "created %s for project %s; the key above is shown only once\n", rec.ID, rec.Project)
		return nil
	case "revoke":
		id, err := keyID(ctx, st, args[1])
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
	keys, err := st.APIKeys(ctx, *project)
	if err != nil {
		return fmt.Errorf("keys list: %w", err)
	}
	printKeys(env, keys, now)
	return nil
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
	fmt.Fprintln(tw, "ID\tPREFIX\tPROJECT\tNAME\tCREATED\tEXPIRES\tLAST USED\tREVOKED")
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, prefix, k.Project, label,
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
