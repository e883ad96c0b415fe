package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/client"
	"github.com/cdnapi/cdnapi/internal/sqlite"
)

// The examples talk to a real cdnapi server that TestMain starts on
// loopback, over SQLite, with the five files and two regions below. In a
// program, apiURL and edgeURL are the addresses of a deployment, such as
// "http://127.0.0.1:8080" and "http://127.0.0.1:8081".
var apiURL, edgeURL string

// startExampleServer starts the server of the examples and returns how to
// stop it.
func startExampleServer() (stop func(), err error) {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "cdnapi-client-examples")
	if err != nil {
		return nil, err
	}
	st, err := sqlite.Open(ctx, filepath.Join(dir, "cdnapi.db"), sqlite.Options{})
	if err != nil {
		return nil, err
	}
	closeStore := func() { st.Close(); os.RemoveAll(dir) }
	if err := fillExamples(ctx, st); err != nil {
		closeStore()
		return nil, err
	}
	apiHandler, edgeHandler, err := handlers(ctx, st, nil)
	if err != nil {
		closeStore()
		return nil, err
	}
	apiSrv, edgeSrv := httptest.NewServer(apiHandler), httptest.NewServer(edgeHandler)
	apiURL, edgeURL = apiSrv.URL, edgeSrv.URL
	return func() { apiSrv.Close(); edgeSrv.Close(); closeStore() }, nil
}

func fillExamples(ctx context.Context, st *sqlite.Store) error {
	if err := st.Migrate(ctx); err != nil {
		return err
	}
	regions := []cdnapi.Region{
		{Code: "FRA1", Name: "Frankfurt", Zone: "eu-central", Country: "DE", Status: cdnapi.StatusOperational},
		{Code: "IAD1", Name: "Ashburn", Zone: "us-east", Country: "US", Status: cdnapi.StatusUnderMaintenance},
	}
	day := time.Date(2026, 11, 20, 14, 0, 0, 0, time.UTC)
	sum := "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	var files []cdnapi.File
	for i, name := range []string{"report.pdf", "logo.png", "backup.tar.gz", "notes.txt", "slides.pdf"} {
		files = append(files, cdnapi.File{ID: fmt.Sprintf("fil_example%d", i+1), Project: "default",
			CreatedAt: day.Add(time.Duration(i) * time.Minute), Filename: name, Bytes: int64(1000 * (i + 1)), Checksum: sum})
	}
	return st.Write(ctx, func(w cdnapi.Writer) error {
		if err := w.PutRegions(ctx, regions); err != nil {
			return err
		}
		return w.PutFiles(ctx, files)
	})
}

// Files walks every file of the project, newest first, asking for pages of
// two: the iterator follows next_cursor by itself.
func ExampleClient_Files() {
	c, err := client.New(apiURL, edgeURL)
	if err != nil {
		log.Fatal(err)
	}
	for f, err := range c.Files(context.Background(), client.ListFilesParams{Limit: 2}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(f.ID, f.Filename, f.Bytes, f.CreatedAt.Format(time.RFC3339))
	}
	// Output:
	// fil_example5 slides.pdf 5000 2026-11-20T14:04:00Z
	// fil_example4 notes.txt 4000 2026-11-20T14:03:00Z
	// fil_example3 backup.tar.gz 3000 2026-11-20T14:02:00Z
	// fil_example2 logo.png 2000 2026-11-20T14:01:00Z
	// fil_example1 report.pdf 1000 2026-11-20T14:00:00Z
}

// ListFiles fetches one page; the next one starts at its NextCursor.
func ExampleClient_ListFiles() {
	c, err := client.New(apiURL, edgeURL)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	page, err := c.ListFiles(ctx, client.ListFilesParams{Limit: 3})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(page.Items), "files, more:", page.HasMore)
	page, err = c.ListFiles(ctx, client.ListFilesParams{Limit: 3, Cursor: page.NextCursor})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(page.Items), "files, more:", page.HasMore, "first:", page.Items[0].ID)
	// Output:
	// 3 files, more: true
	// 2 files, more: false first: fil_example2
}

func ExampleClient_ListRegions() {
	c, err := client.New(apiURL, edgeURL)
	if err != nil {
		log.Fatal(err)
	}
	regions, err := c.ListRegions(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range regions.Items {
		fmt.Println(r.Code, r.Name, r.Status)
	}
	// Output:
	// FRA1 Frankfurt operational
	// IAD1 Ashburn under_maintenance
}

// An error answer of the API is an *Error, with the fields of the body.
func ExampleError() {
	c, err := client.New(apiURL, edgeURL)
	if err != nil {
		log.Fatal(err)
	}
	_, err = c.ListAssets(context.Background(), client.ListAssetsParams{Region: "XYZ9"})
	if e, ok := errors.AsType[*client.Error](err); ok {
		fmt.Println(e.StatusCode, e.Code, e.Param)
		fmt.Println(e.Message)
	}
	// Output:
	// 400 region_unknown region
	// region names no known point of presence; GET /api/v1/regions lists them
}

// With WithCache, a page asked for again is revalidated with If-None-Match
// and, when it has not changed, returned without a body over the wire.
func ExampleWithCache() {
	c, err := client.New(apiURL, edgeURL, client.WithCache(100), client.WithRetries(2, 100*time.Millisecond, 2*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	for range 2 {
		doc, err := c.Status(context.Background())
		if err != nil {
			log.Fatal(err)
		}
		// The API component: the overall status of this example's
		// server is under_maintenance, as it has no upload service and
		// no scanner to measure (see the README's Uploads).
		fmt.Println(len(doc.Components), "components;", doc.Components[0].Name, doc.Components[0].Status)
	}
	// Output:
	// 4 components; API operational
	// 4 components; API operational
}
