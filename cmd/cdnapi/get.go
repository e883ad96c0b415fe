package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net"
	"net/http"
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

// getConfig is what get's arguments and their CDNAPI_* variables say.
type getConfig struct {
	what            string // files, assets, regions or status
	apiURL, edgeURL string
	key             string
	limit           int
	region          string
	cursor          string
	all             bool
	output          string // table, json or ndjson
}

// parseGetConfig parses get's arguments and checks them.
func parseGetConfig(env *environment, args []string) (getConfig, error) {
	var c getConfig
	fs := newFlagSet("get", getSynopsis, env.stdout)
	fs.StringVar(&c.apiURL, "api", "", "base URL of the API address (default "+defaultAPIURL+", or CDNAPI_API_URL)")
	fs.StringVar(&c.edgeURL, "edge", "", "base URL of the edge address (default "+defaultEdgeURL+", or CDNAPI_EDGE_URL)")
	fs.StringVar(&c.key, "key", "", "API key, sent as Authorization: Bearer KEY")
	fs.IntVar(&c.limit, "limit", 0, "items per page, 1 to 100 (default: the server's, 20; with --all, 100)")
	fs.StringVar(&c.region, "region", "", "assets: only those of this region, such as FRA1")
	fs.StringVar(&c.cursor, "cursor", "", "start at this next_cursor of an earlier page")
	fs.BoolVar(&c.all, "all", false, "print every page, following next_cursor")
	fs.StringVar(&c.output, "o", "", "output: table, json or ndjson (default: table on a terminal, json otherwise)")
	args, err := parseArgs(fs, args, env.getenv)
	if err != nil {
		return c, err
	}
	// The addresses also come from CDNAPI_API_URL and CDNAPI_EDGE_URL, the
	// names the Go client's users know them by.
	c.apiURL = firstOf(c.apiURL, env.getenv("CDNAPI_API_URL"), defaultAPIURL)
	c.edgeURL = firstOf(c.edgeURL, env.getenv("CDNAPI_EDGE_URL"), defaultEdgeURL)
	if len(args) != 1 {
		return c, usageError{"get: want files, assets, regions or status (see cdnapi get --help)"}
	}
	c.what = args[0]
	if c.output == "" {
		c.output = "json"
		if isTerminal(env.stdout) {
			c.output = "table"
		}
	}
	return c, c.validate()
}

// validate reports the first value of c that get cannot work with, as a
// usageError.
func (c getConfig) validate() error {
	paged := c.what == "files" || c.what == "assets"
	switch {
	case !paged && c.what != "regions" && c.what != "status":
		return usageError{fmt.Sprintf("get: unknown list %q; want files, assets, regions or status", c.what)}
	case !paged && (c.limit != 0 || c.cursor != ""):
		// --all is accepted: the regions and the status are one page, which
		// is all of them.
		return usageError{fmt.Sprintf("get %s: --limit and --cursor are for files and assets; %s is one page", c.what, c.what)}
	case c.what != "assets" && c.region != "":
		return usageError{"get: --region is for assets"}
	case c.output != "table" && c.output != "json" && c.output != "ndjson":
		return usageError{fmt.Sprintf("get: -o %q: want table, json or ndjson", c.output)}
	}
	return nil
}

// runGet is the get command: it reads one list, or all of it, from a
// running cdnapi and prints it.
func runGet(ctx context.Context, env *environment, args []string) error {
	cfg, err := parseGetConfig(env, args)
	if err != nil {
		return err
	}
	// --all walks the largest pages the API serves: 20 to a page took
	// five times the requests, and so five times the rate limit's budget.
	if cfg.all && cfg.limit == 0 {
		cfg.limit = cdnapi.MaxLimit
	}
	c, err := client.New(cfg.apiURL, cfg.edgeURL, client.WithAPIKey(cfg.key), client.WithUserAgent("cdnapi-cli/1"),
		client.WithRetryNotice(func(r client.Retry) { fmt.Fprintln(env.stderr, retryNotice(cfg.what, r)) }))
	if err != nil {
		return usageError{"get: " + err.Error()}
	}
	out := bufio.NewWriterSize(env.stdout, 64<<10)
	err = cfg.print(ctx, c, out)
	if ferr := out.Flush(); err == nil && ferr != nil {
		err = ferr
	}
	if err != nil {
		return cfg.explain(err)
	}
	return nil
}

// print reads what c.what names through cl and prints it to out.
func (c getConfig) print(ctx context.Context, cl *client.Client, out *bufio.Writer) error {
	switch c.what {
	case "files":
		p := client.ListFilesParams{Limit: c.limit, Cursor: c.cursor}
		return printList(out, c.output, fileFormat, c.all,
			func() (client.Page[cdnapi.File], error) { return cl.ListFiles(ctx, p) },
			func() iter.Seq2[cdnapi.File, error] { return cl.Files(ctx, p) })
	case "assets":
		p := client.ListAssetsParams{Limit: c.limit, Region: c.region, Cursor: c.cursor}
		return printList(out, c.output, assetFormat, c.all,
			func() (client.Page[cdnapi.Asset], error) { return cl.ListAssets(ctx, p) },
			func() iter.Seq2[cdnapi.Asset, error] { return cl.Assets(ctx, p) })
	case "regions":
		return printList(out, c.output, regionFormat, false,
			func() (client.Page[cdnapi.Region], error) { return cl.ListRegions(ctx) }, nil)
	}
	return printStatus(ctx, cl, out, c.output)
}

// explain returns err of a get as it reads on the command line.
func (c getConfig) explain(err error) error {
	if netErr, ok := errors.AsType[*net.OpError](err); ok && netErr.Op == "dial" {
		// Most likely serve is not running there, or runs elsewhere:
		// say which address was tried and how to choose another.
		flag, envVar, base := "--api", "CDNAPI_API_URL", c.apiURL
		if c.what == "regions" || c.what == "assets" {
			flag, envVar, base = "--edge", "CDNAPI_EDGE_URL", c.edgeURL
		}
		return fmt.Errorf("get %s: cannot reach %s (%v); is cdnapi serve running there? Give its address with %s URL or %s",
			c.what, base, netErr.Err, flag, envVar)
	}
	// The API's 401 tells an HTTP client which header to send; on the
	// command line the key is --key or CDNAPI_KEY.
	if apiErr, ok := errors.AsType[*client.Error](err); ok && apiErr.StatusCode == http.StatusUnauthorized {
		what := "the API needs a key: give it with --key KEY or CDNAPI_KEY (cdnapi keys create makes one)"
		if c.key != "" {
			what = "the API refused the key of --key or CDNAPI_KEY: it is unknown, revoked or expired (see cdnapi keys list)"
		}
		return fmt.Errorf("get %s: %s (%d %s, request %s)", c.what, what, apiErr.StatusCode, apiErr.Code, apiErr.RequestID)
	}
	// A *client.Error reads as the contract's message, with the status,
	// code and request ID.
	return fmt.Errorf("get %s: %w", c.what, err)
}

// retryNotice is the line get prints on stderr before it waits to retry,
// so that a long wait on a rate limit is not silence.
func retryNotice(what string, r client.Retry) string {
	why := "the server did not answer"
	if apiErr, ok := errors.AsType[*client.Error](r.Err); ok {
		why = fmt.Sprintf("the server answered %d %s", apiErr.StatusCode, cmp.Or(apiErr.Code, http.StatusText(apiErr.StatusCode)))
	}
	asked := ""
	if r.Asked {
		asked = " (as it asked)"
	}
	return fmt.Sprintf("get %s: %s; waiting %s%s before retry %d of %d", what, why, r.Wait.Round(100*time.Millisecond), asked, r.Attempt, r.Max)
}

func firstOf(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}

// listItem is an item of the lists that get prints.
type listItem interface {
	cdnapi.File | cdnapi.Asset | cdnapi.Region
}

// itemFormat is how a list's items are printed as a table; as JSON, they
// are printed as the API shows them, by client.MarshalJSON.
type itemFormat[T listItem] struct {
	header string // the table's column names, tab-separated
	row    func(T) string
}

// printList prints one page (page) or, with all, every item of the walk
// (walk), in the output format out.
func printList[T listItem](w *bufio.Writer, out string, f itemFormat[T], all bool,
	page func() (client.Page[T], error), walk func() iter.Seq2[T, error]) error {
	items := walk
	var last client.Page[T] // with all, no page follows the walk
	if !all {
		p, err := page()
		if err != nil {
			return err
		}
		last, items = p, func() iter.Seq2[T, error] { return pageItems(p) }
	}
	lp := newListPrinter(w, out, f)
	lp.begin()
	for it, err := range items() {
		if err != nil {
			return err
		}
		if err := lp.item(it); err != nil {
			return err
		}
	}
	lp.end(last.HasMore, last.NextCursor)
	return nil
}

// pageItems yields the items of p.
func pageItems[T listItem](p client.Page[T]) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for _, it := range p.Items {
			if !yield(it, nil) {
				return
			}
		}
	}
}

// listPrinter prints a list in one output format: begin before the first
// item, item for each, and end after the last, with the cursor of the page
// that follows, if any.
type listPrinter[T listItem] interface {
	begin()
	item(T) error
	end(hasMore bool, next string)
}

// newListPrinter returns the printer of output format out (table, json or
// ndjson) on w; tables take their columns from f.
func newListPrinter[T listItem](w *bufio.Writer, out string, f itemFormat[T]) listPrinter[T] {
	switch out {
	case "table":
		return &tablePrinter[T]{w: w, tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0), f: f}
	case "json":
		return &jsonPrinter[T]{w: w}
	}
	return ndjsonPrinter[T]{w: w}
}

// tablePrinter prints aligned columns, with a line that gives the next
// page's cursor.
type tablePrinter[T listItem] struct {
	w  *bufio.Writer
	tw *tabwriter.Writer
	f  itemFormat[T]
	n  int
}

func (p *tablePrinter[T]) begin() { fmt.Fprintln(p.tw, p.f.header) }

func (p *tablePrinter[T]) item(it T) error {
	fmt.Fprintln(p.tw, p.f.row(it))
	if p.n++; p.n%1000 == 0 {
		p.tw.Flush() // a long walk shows as it goes, in blocks of aligned rows
	}
	return nil
}

func (p *tablePrinter[T]) end(hasMore bool, next string) {
	p.tw.Flush()
	if hasMore {
		fmt.Fprintf(p.w, "… more: --cursor %s, or --all\n", next)
	}
}

// jsonPrinter prints the list envelope of the API, an item a line.
type jsonPrinter[T listItem] struct {
	w *bufio.Writer
	n int
}

func (p *jsonPrinter[T]) begin() { p.w.WriteString(`{"object":"list","data":[`) }

func (p *jsonPrinter[T]) item(it T) error {
	line, err := client.MarshalJSON(it)
	if err != nil {
		return err
	}
	if p.n > 0 {
		p.w.WriteByte(',')
	}
	p.n++
	p.w.WriteByte('\n')
	p.w.Write(line)
	return nil
}

func (p *jsonPrinter[T]) end(hasMore bool, next string) {
	cursor, _ := json.Marshal(next)
	if !hasMore {
		cursor = []byte("null")
	}
	fmt.Fprintf(p.w, "\n],\"has_more\":%t,\"next_cursor\":%s}\n", hasMore, cursor)
}

// ndjsonPrinter prints an item a line and nothing else: what ingest reads.
type ndjsonPrinter[T listItem] struct{ w *bufio.Writer }

func (p ndjsonPrinter[T]) begin() {}

func (p ndjsonPrinter[T]) item(it T) error {
	line, err := client.MarshalJSON(it)
	if err != nil {
		return err
	}
	p.w.Write(line)
	p.w.WriteByte('\n')
	return nil
}

func (p ndjsonPrinter[T]) end(bool, string) {}

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
