package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net"
	"text/tabwriter"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/client"
)

const getSynopsis = `get files|assets|regions|status [--api URL] [--edge URL] [--key KEY] [--limit N] [--region CODE] [--cursor C] [--all] [-o table|json|ndjson]

Reads the API of a running cdnapi through the Go client (package client),
which retries 429, 503 and network errors. Files and status come from the API
address (--api, or CDNAPI_API_URL), regions and assets from the edge address
(--edge, or CDNAPI_EDGE_URL); --key (CDNAPI_KEY) is sent as a Bearer key.

One page is printed, or with --all every page from --cursor on (regions and
status are one page: --all changes nothing there). Output is a
table on a terminal and JSON otherwise: the list envelope of the API (with
--all, one envelope that holds every item). -o ndjson prints one item per
line, exactly what cdnapi ingest reads, so that

  cdnapi migrate --db other.db
  cdnapi get files --all -o ndjson | cdnapi ingest files --db other.db

copies a project's files into another deployment.`

// The addresses of serve's defaults.
const (
	defaultAPIURL  = "http://127.0.0.1:8080"
	defaultEdgeURL = "http://127.0.0.1:8081"
)

func runGet(ctx context.Context, env *environment, args []string) error {
	fs := newFlagSet("get", getSynopsis, env.stdout)
	var (
		apiURL  = fs.String("api", "", "base URL of the API address (default "+defaultAPIURL+", or CDNAPI_API_URL)")
		edgeURL = fs.String("edge", "", "base URL of the edge address (default "+defaultEdgeURL+", or CDNAPI_EDGE_URL)")
		key     = fs.String("key", "", "API key, sent as Authorization: Bearer KEY")
		limit   = fs.Int("limit", 0, "items per page, 1 to 100 (default: the server's, 20)")
		region  = fs.String("region", "", "assets: only those of this region, such as FRA1")
		cursor  = fs.String("cursor", "", "start at this next_cursor of an earlier page")
		all     = fs.Bool("all", false, "print every page, following next_cursor")
		output  = fs.String("o", "", "output: table, json or ndjson (default: table on a terminal, json otherwise)")
	)
	args, err := parseArgs(fs, args, env.getenv)
	if err != nil {
		return err
	}
	// The addresses also come from CDNAPI_API_URL and CDNAPI_EDGE_URL, the
	// names the Go client's users know them by.
	*apiURL = firstOf(*apiURL, env.getenv("CDNAPI_API_URL"), defaultAPIURL)
	*edgeURL = firstOf(*edgeURL, env.getenv("CDNAPI_EDGE_URL"), defaultEdgeURL)
	if len(args) != 1 {
		return usageError{"get: want files, assets, regions or status (see cdnapi get --help)"}
	}
	what := args[0]
	paged := what == "files" || what == "assets"
	switch {
	case what != "files" && what != "assets" && what != "regions" && what != "status":
		return usageError{fmt.Sprintf("get: unknown list %q; want files, assets, regions or status", what)}
	case !paged && (*limit != 0 || *cursor != ""):
		// --all is accepted: the regions and the status are one page, which
		// is all of them.
		return usageError{fmt.Sprintf("get %s: --limit and --cursor are for files and assets; %s is one page", what, what)}
	case what != "assets" && *region != "":
		return usageError{"get: --region is for assets"}
	}
	if *output == "" {
		*output = "json"
		if isTerminal(env.stdout) {
			*output = "table"
		}
	}
	if *output != "table" && *output != "json" && *output != "ndjson" {
		return usageError{fmt.Sprintf("get: -o %q: want table, json or ndjson", *output)}
	}
	c, err := client.New(*apiURL, *edgeURL, client.WithAPIKey(*key), client.WithUserAgent("cdnapi-cli/1"))
	if err != nil {
		return usageError{"get: " + err.Error()}
	}

	out := bufio.NewWriterSize(env.stdout, 64<<10)
	switch what {
	case "files":
		p := client.ListFilesParams{Limit: *limit, Cursor: *cursor}
		err = printList(out, *output, fileFormat, *all,
			func() (client.Page[cdnapi.File], error) { return c.ListFiles(ctx, p) },
			func() iter.Seq2[cdnapi.File, error] { return c.Files(ctx, p) })
	case "assets":
		p := client.ListAssetsParams{Limit: *limit, Region: *region, Cursor: *cursor}
		err = printList(out, *output, assetFormat, *all,
			func() (client.Page[cdnapi.Asset], error) { return c.ListAssets(ctx, p) },
			func() iter.Seq2[cdnapi.Asset, error] { return c.Assets(ctx, p) })
	case "regions":
		err = printList(out, *output, regionFormat, false,
			func() (client.Page[cdnapi.Region], error) { return c.ListRegions(ctx) }, nil)
	case "status":
		err = printStatus(ctx, c, out, *output)
	}
	if ferr := out.Flush(); err == nil && ferr != nil {
		err = ferr
	}
	if err != nil {
		if netErr, ok := errors.AsType[*net.OpError](err); ok && netErr.Op == "dial" {
			// Most likely serve is not running there, or runs elsewhere:
			// say which address was tried and how to choose another.
			flag, envVar, base := "--api", "CDNAPI_API_URL", *apiURL
			if what == "regions" || what == "assets" {
				flag, envVar, base = "--edge", "CDNAPI_EDGE_URL", *edgeURL
			}
			return fmt.Errorf("get %s: cannot reach %s (%v); is cdnapi serve running there? Give its address with %s URL or %s",
				what, base, netErr.Err, flag, envVar)
		}
		// A *client.Error reads as the contract's message, with the status,
		// code and request ID.
		return fmt.Errorf("get %s: %w", what, err)
	}
	return nil
}

func firstOf(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}

// itemFormat is how a list's items are printed as a table; as JSON, they
// are printed as the API shows them, by client.MarshalJSON.
type itemFormat[T cdnapi.File | cdnapi.Asset | cdnapi.Region] struct {
	header string // the table's column names, tab-separated
	row    func(T) string
}

// printList prints one page (page) or, with all, every item of the walk
// (walk), in the output format out.
func printList[T cdnapi.File | cdnapi.Asset | cdnapi.Region](w *bufio.Writer, out string, f itemFormat[T], all bool,
	page func() (client.Page[T], error), walk func() iter.Seq2[T, error]) error {
	var items iter.Seq2[T, error]
	var last client.Page[T]
	if all {
		items = walk()
	} else {
		p, err := page()
		if err != nil {
			return err
		}
		last, items = p, func(yield func(T, error) bool) {
			for _, it := range p.Items {
				if !yield(it, nil) {
					return
				}
			}
		}
	}

	var tw *tabwriter.Writer
	switch out {
	case "table":
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, f.header)
	case "json":
		w.WriteString(`{"object":"list","data":[`)
	}
	n := 0
	for it, err := range items {
		if err != nil {
			return err
		}
		switch out {
		case "table":
			fmt.Fprintln(tw, f.row(it))
			if n%1000 == 999 {
				tw.Flush() // a long walk shows as it goes, in blocks of aligned rows
			}
		default:
			line, err := client.MarshalJSON(it)
			if err != nil {
				return err
			}
			if out == "json" {
				if n > 0 {
					w.WriteByte(',')
				}
				w.WriteByte('\n')
			}
			w.Write(line)
			if out == "ndjson" {
				w.WriteByte('\n')
			}
		}
		n++
	}
	switch out {
	case "table":
		tw.Flush()
		if last.HasMore {
			fmt.Fprintf(w, "… more: --cursor %s, or --all\n", last.NextCursor)
		}
	case "json":
		next, _ := json.Marshal(last.NextCursor)
		if !last.HasMore {
			next = []byte("null")
		}
		fmt.Fprintf(w, "\n],\"has_more\":%t,\"next_cursor\":%s}\n", last.HasMore, next)
	}
	return nil
}

var (
	fileFormat = itemFormat[cdnapi.File]{
		header: "ID\tCREATED\tSIZE\tFILENAME",
		row: func(f cdnapi.File) string {
			return fmt.Sprintf("%s\t%s\t%s\t%s", f.ID, localTime(f.CreatedAt), humanize.IBytes(uint64(f.Bytes)), f.Filename)
		},
	}
	assetFormat = itemFormat[cdnapi.Asset]{
		header: "ID\tCREATED\tREGION\tCACHE\tSIZE\tPATH",
		row: func(a cdnapi.Asset) string {
			return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", a.ID, localTime(a.CreatedAt), a.Region, a.CacheStatus,
				humanize.IBytes(uint64(a.Bytes)), a.Path)
		},
	}
	regionFormat = itemFormat[cdnapi.Region]{
		header: "CODE\tNAME\tZONE\tCOUNTRY\tSTATUS",
		row: func(r cdnapi.Region) string {
			return fmt.Sprintf("%s\t%s\t%s\t%s\t%s", r.Code, r.Name, r.Zone, r.Country, r.Status)
		},
	}
)

// localTime shows t in the local time zone, to the second.
func localTime(t time.Time) string { return t.Local().Format("2006-01-02 15:04:05 MST") }

// printStatus prints the status document.
func printStatus(ctx context.Context, c *client.Client, w io.Writer, out string) error {
	doc, err := c.Status(ctx)
	if err != nil {
		return err
	}
	if out == "table" {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "STATUS\t%s\nREGION\t%s\nUPDATED\t%s\n\nCOMPONENT\tSTATUS\n", doc.Status, doc.Region, localTime(doc.UpdatedAt))
		for _, comp := range doc.Components {
			fmt.Fprintf(tw, "%s\t%s\n", comp.Name, comp.Status)
		}
		return tw.Flush()
	}
	line, err := client.MarshalJSON(doc)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", line)
	return err
}
