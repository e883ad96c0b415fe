package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
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

func runIngest(ctx context.Context, env *environment, args []string) error {
	fs := newFlagSet("ingest", ingestSynopsis, env.stdout)
	db := addStoreFlags(fs, false)
	var (
		project = fs.String("project", "default", "project of the files whose line has no \"project\" field")
		skip    = fs.Bool("skip-invalid", false, "write the valid lines and report the invalid ones (default: an invalid line means nothing is written)")
		rejects = fs.String("rejects", "", "with --skip-invalid: write each invalid line, as read, to this file")
		metrics = fs.String("metrics-file", "", "write the run's rows accepted and rejected to this file, in Prometheus's text format (node_exporter's textfile collector)")
	)
	args, err := parseArgs(fs, args, env.getenv)
	if err != nil {
		return err
	}
	if len(args) == 0 || len(args) > 2 || !slices.Contains(ingest.Kinds, ingest.Kind(args[0])) {
		return usageError{"ingest: want files, assets or regions, then an optional FILE (see cdnapi ingest --help)"}
	}
	kind := ingest.Kind(args[0])
	if !cdnapi.ValidProject(*project) {
		return usageError{fmt.Sprintf("ingest: --project must be %s", cdnapi.ProjectRule)}
	}
	if *rejects != "" && !*skip {
		return usageError{"ingest: --rejects goes with --skip-invalid; without it an invalid line writes nothing"}
	}

	if env.getenv("GOGC") == "" {
		// An ingest's live heap is small (a few batches in flight), so at
		// the default GOGC the collector runs every few milliseconds and
		// takes a core of two from the parser and the writer. Collecting
		// less often costs tens of megabytes: on 1,000,000 assets into
		// SQLite, 240,000 lines/s instead of 200,000.
		defer debug.SetGCPercent(debug.SetGCPercent(ingestGCPercent))
	}

	in, size, name := env.stdin, int64(0), "standard input"
	if len(args) == 2 && args[1] != "-" {
		f, err := os.Open(args[1])
		if err != nil {
			return fmt.Errorf("ingest: %w", err)
		}
		defer f.Close()
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			size = fi.Size() // known, so the progress line can show an ETA
		}
		in, name = f, args[1]
	}
	// Gzip is read as it is; CSV, a JSON array or other compressed data is
	// refused at once, saying what it looks like.
	in, gzipped, err := ingest.Input(in)
	if err != nil {
		return fmt.Errorf("ingest: %s: %w", name, err)
	}
	if gzipped {
		size = 0 // the file's size is not the size of what is read
	}
	// The output files are checked before a row is written: an ingest
	// that committed must not then fail for want of a directory.
	if *metrics != "" {
		if err := checkOutputPath(*metrics); err != nil {
			return usageError{fmt.Sprintf("ingest: --metrics-file: %v", err)}
		}
	}
	var rejectsFile *os.File
	if *rejects != "" {
		if err := checkOutputPath(*rejects); err != nil {
			return usageError{fmt.Sprintf("ingest: --rejects: %v", err)}
		}
		if rejectsFile, err = os.Create(*rejects); err != nil {
			return fmt.Errorf("ingest: %w", err)
		}
		defer rejectsFile.Close()
	}

	st, err := db.openMigrated(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	var progress ingest.Progress
	display := startProgress(env.stderr, &progress, size)
	opts := ingest.Options{
		Kind:        kind,
		Project:     *project,
		SkipInvalid: *skip,
		Progress:    &progress,
		OnInvalid: func(e *ingest.LineError) {
			if progress.Invalid() <= maxShownErrors {
				display.println(e.Error())
			}
		},
	}
	if rejectsFile != nil {
		opts.Rejects = rejectsFile
	}
	res, err := ingest.Run(ctx, st, in, opts)
	if rejectsFile != nil {
		if cerr := rejectsFile.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("ingest: write %s: %w", *rejects, cerr)
		}
	}
	display.finish(ingestSummary(kind, res, err, time.Since(display.start), *rejects))
	if err == nil && res.Lines == 0 {
		fmt.Fprintf(env.stderr, "warning: %s was empty: no %s were read (ingest reads NDJSON, one JSON object per line)\n", name, kind)
	}
	if *metrics != "" {
		if merr := writeIngestMetrics(*metrics, kind, res, err, time.Now()); err == nil {
			err = merr
		}
	}
	if invalid, ok := errors.AsType[*ingest.InvalidError](err); ok {
		return fmt.Errorf("ingest: %v (fix the lines, or pass --skip-invalid to write the valid ones)", invalid)
	}
	return err
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
		return s + fmt.Sprintf("read %s lines of %s in %s (%s lines/s); %s invalid; nothing was written",
			grouped(res.Lines), kind, took.Round(time.Millisecond), grouped(rate), grouped(res.Invalid))
	}
	s += fmt.Sprintf("ingested %s %s in %s (%s lines/s); %s invalid",
		grouped(res.Written), kind, took.Round(time.Millisecond), grouped(rate), grouped(res.Invalid))
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
