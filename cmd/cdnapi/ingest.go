package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/ingest"
)

const ingestSynopsis = `ingest files|assets|regions [--db DSN] [--project P] [--skip-invalid] [--rejects FILE] [--metrics-file FILE] [FILE|-]

Reads NDJSON, one JSON object per line, from FILE or, when it is - or
missing, from standard input, and upserts every record: files and assets by
id, regions by code. The fields are those of the API output; assets also
carry "region" (a region that exists), and files may carry "project".

By default the whole input is one transaction: any invalid line means nothing
is written, and the errors are listed. With --skip-invalid the valid lines
are written and the invalid ones reported, or kept in --rejects FILE.

Gzip data (a FILE.ndjson.gz, or on standard input) is decompressed as it
is read. An empty input writes nothing and warns. The database must exist
(cdnapi migrate creates it).

  cdnapi ingest assets requests.ndjson.gz`

// maxShownErrors is how many invalid lines an ingest lists on stderr; a
// count stands for the rest, which --rejects keeps in full.
const maxShownErrors = 20

// ingestGCPercent is the GOGC of an ingest, unless GOGC is set.
const ingestGCPercent = 400

// ingestConfig is what ingest's arguments and their CDNAPI_* variables say.
type ingestConfig struct {
	kind        ingest.Kind
	path        string // the input: a file, or "" or "-" for standard input
	project     string // of the files whose line names none
	skipInvalid bool
	rejects     string // with skipInvalid: where the invalid lines go, or ""
	metricsFile string // where the run's counts go, or ""
	db          storeFlags
}

// parseIngestConfig parses ingest's arguments and checks them, before
// anything is opened.
func parseIngestConfig(env *environment, args []string) (ingestConfig, error) {
	var c ingestConfig
	fs := newFlagSet("ingest", ingestSynopsis, env.stdout)
	c.db = addStoreFlags(fs, bulkWrites)
	fs.StringVar(&c.project, "project", "default", "project of the files whose line has no \"project\" field")
	fs.BoolVar(&c.skipInvalid, "skip-invalid", false, "write the valid lines and report the invalid ones (default: an invalid line means nothing is written)")
	fs.StringVar(&c.rejects, "rejects", "", "with --skip-invalid: write each invalid line, as read, to this file")
	fs.StringVar(&c.metricsFile, "metrics-file", "", "write the run's rows accepted and rejected to this file, in Prometheus's text format (node_exporter's textfile collector)")
	args, err := parseArgs(fs, args, env.getenv)
	if err != nil {
		return c, err
	}
	if len(args) == 0 || len(args) > 2 || !slices.Contains(ingest.Kinds, ingest.Kind(args[0])) {
		return c, usageError{"ingest: want files, assets or regions, then an optional FILE (see cdnapi ingest --help)"}
	}
	c.kind = ingest.Kind(args[0])
	if len(args) == 2 {
		c.path = args[1]
	}
	if !cdnapi.ValidProject(c.project) {
		return c, usageError{fmt.Sprintf("ingest: --project must be %s", cdnapi.ProjectRule)}
	}
	if c.rejects != "" && !c.skipInvalid {
		return c, usageError{"ingest: --rejects goes with --skip-invalid; without it an invalid line writes nothing"}
	}
	if abs, ok := isDirectory(c.path); ok && c.path != "-" {
		return c, usageError{fmt.Sprintf("ingest: %s is a directory; give the path of an NDJSON file, or - for standard input", abs)}
	}
	if err := c.db.checkNotDirectory(); err != nil {
		return c, err
	}
	return c, nil
}

// runIngest is the ingest command: it reads the input, checks that the
// output files can be written, then writes the input to the store and
// reports on it.
func runIngest(ctx context.Context, env *environment, args []string) error {
	cfg, err := parseIngestConfig(env, args)
	if err != nil {
		return err
	}
	// An ingest's live heap is small (a few batches in flight), so at the
	// default GOGC the collector runs every few milliseconds and takes a
	// core of two from the parser and the writer. Collecting less often
	// costs tens of megabytes: on 1,000,000 assets into SQLite, 240,000
	// lines/s instead of 200,000.
	defer env.collectLessOften(ingestGCPercent)()
	in, err := openIngestInput(env.stdin, cfg.path)
	if err != nil {
		return err
	}
	defer in.Close()
	rejects, err := cfg.createOutputs()
	if err != nil {
		return err
	}
	if rejects != nil {
		defer rejects.Close()
	}
	st, err := cfg.db.openMigrated(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	res, err := cfg.ingest(ctx, env, st, in, rejects)
	if err == nil && res.Lines == 0 {
		fmt.Fprintf(env.stderr, "warning: %s was empty: no %s were read (ingest reads NDJSON, one JSON object per line)\n", in.name, cfg.kind)
	}
	if cfg.metricsFile != "" {
		if merr := writeIngestMetrics(cfg.metricsFile, cfg.kind, res, err, time.Now()); err == nil {
			err = merr
		}
	}
	if invalid, ok := errors.AsType[*ingest.InvalidError](err); ok {
		return fmt.Errorf("ingest: %v (fix the lines, or pass --skip-invalid to write the valid ones)", invalid)
	}
	return err
}

// ingestInput is the NDJSON an ingest reads, gzip already undone.
type ingestInput struct {
	r    io.Reader
	name string   // the file's, or "standard input"
	size int64    // bytes to read, for the progress line's ETA; 0 when unknown
	file *os.File // the file opened, nil for standard input
}

// openIngestInput opens the input at path, or stdin for "" and "-". Gzip
// is read as it is; CSV, a JSON array or other compressed data is refused
// at once, saying what it looks like.
func openIngestInput(stdin io.Reader, path string) (ingestInput, error) {
	in := ingestInput{r: stdin, name: "standard input"}
	if path != "" && path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return in, fmt.Errorf("ingest: %w", err)
		}
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			in.size = fi.Size()
		}
		in.r, in.name, in.file = f, path, f
	}
	r, gzipped, err := ingest.Input(in.r)
	if err != nil {
		in.Close()
		return in, fmt.Errorf("ingest: %s: %w", in.name, err)
	}
	in.r = r
	if gzipped {
		in.size = 0 // the file's size is not the size of what is read
	}
	return in, nil
}

// Close closes the file read, if any.
func (in ingestInput) Close() error {
	if in.file == nil {
		return nil
	}
	return in.file.Close()
}

// createOutputs checks that the metrics file can be written and creates
// the rejects file (nil without --rejects), before a row is written: an
// ingest that committed must not then fail for want of a directory.
func (c ingestConfig) createOutputs() (rejects *os.File, err error) {
	if c.metricsFile != "" {
		if err := checkOutputPath(c.metricsFile); err != nil {
			return nil, usageError{fmt.Sprintf("ingest: --metrics-file: %v", err)}
		}
	}
	if c.rejects == "" {
		return nil, nil
	}
	if err := checkOutputPath(c.rejects); err != nil {
		return nil, usageError{fmt.Sprintf("ingest: --rejects: %v", err)}
	}
	if rejects, err = os.Create(c.rejects); err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	return rejects, nil
}

// ingest writes in to st, showing its progress and the first invalid
// lines, and ends with the summary line. It closes rejects, if not nil,
// before the summary: a rejects file that could not be written fails the
// ingest.
func (c ingestConfig) ingest(ctx context.Context, env *environment, st store, in ingestInput, rejects *os.File) (ingest.Result, error) {
	var progress ingest.Progress
	display := startProgress(env.stderr, &progress, in.size)
	opts := ingest.Options{
		Kind:        c.kind,
		Project:     c.project,
		SkipInvalid: c.skipInvalid,
		Progress:    &progress,
		OnInvalid: func(e *ingest.LineError) {
			if progress.Invalid() <= maxShownErrors {
				display.println(e.Error())
			}
		},
	}
	if rejects != nil { // not a nil *os.File in the interface
		opts.Rejects = rejects
	}
	res, err := ingest.Run(ctx, st, in.r, opts)
	if rejects != nil {
		if cerr := rejects.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("ingest: write %s: %w", c.rejects, cerr)
		}
	}
	display.finish(ingestSummary(c.kind, res, err, time.Since(display.start), c.rejects))
	return res, err
}

// ingestSummary is the line an ingest ends with, such as "ingested 1,000,000
// assets in 4.1s (243,902 lines/s); 0 invalid".
func ingestSummary(kind ingest.Kind, res ingest.Result, err error, took time.Duration, rejects string) string {
	var s string
	if more := res.Invalid - maxShownErrors; more > 0 {
		s = fmt.Sprintf("… and %s more invalid lines\n", grouped(more))
	}
	rate := int64(float64(res.Lines) / max(took.Seconds(), 1e-9))
	if err != nil {
		return s + fmt.Sprintf("read %s of %s in %s (%s lines/s); %s invalid; nothing was written",
			counted(res.Lines, "lines"), kind, took.Round(time.Millisecond), grouped(rate), grouped(res.Invalid))
	}
	s += fmt.Sprintf("ingested %s in %s (%s lines/s); %s invalid",
		counted(res.Written, string(kind)), took.Round(time.Millisecond), grouped(rate), grouped(res.Invalid))
	if res.Invalid > 0 && rejects != "" {
		s += ", written to " + rejects
	}
	return s
}

// checkOutputPath returns nil if a file can be written at path: its
// directory exists and takes a new file. It names the directory that is
// missing.
func checkOutputPath(path string) error {
	dir := filepath.Dir(path)
	if err := dirExists(dir); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".cdnapi-check-*")
	if err != nil {
		return fmt.Errorf("cannot write in %s: %w", dir, err)
	}
	f.Close()
	return os.Remove(f.Name())
}
