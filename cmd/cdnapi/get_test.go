package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi/internal/pgtest"
)

// getOutput runs `cdnapi get` in-process with the addresses of s in the
// environment, and returns what it printed.
func getOutput(t *testing.T, s *server, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stdout bytes.Buffer
	env := getenvFrom(map[string]string{"CDNAPI_API_URL": s.api, "CDNAPI_EDGE_URL": s.edge})
	err := run(ctx, append([]string{"get"}, args...), env, strings.NewReader(""), &stdout, &bytes.Buffer{})
	return stdout.String(), err
}

// `get files --all -o ndjson | ingest files` copies a project: the copy,
// served, prints the same lines. The source runs on each engine; the two
// commands run as separate processes, joined by a pipe, as in a shell.
func TestGetIngestRoundTrip(t *testing.T) {
	engines := []struct {
		name string
		dsn  func(t *testing.T) string
	}{
		{"sqlite", func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "source.db") }},
		{"postgres", func(t *testing.T) string { return pgtest.NewDatabase(t) }},
	}
	for _, engine := range engines {
		t.Run(engine.name, func(t *testing.T) {
			source := startServe(t, nil, "--db", engine.dsn(t), "--demo")
			want, err := getOutput(t, source, "files", "--all", "-o", "ndjson", "--limit", "37")
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(want, "\n"); n != demoFiles {
				t.Fatalf("get printed %d lines, want %d", n, demoFiles)
			}

			copyDB := migratedDB(t, "copy.db")
			get := exec.Command(os.Args[0], "--", "get", "files", "--all", "-o", "ndjson", "--api", source.api)
			ingest := exec.Command(os.Args[0], "--", "ingest", "files", "--db", copyDB)
			for _, cmd := range []*exec.Cmd{get, ingest} {
				cmd.Env = append(os.Environ(), "CDNAPI_TEST_AS_MAIN=1")
			}
			pipe, err := get.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			ingest.Stdin = pipe
			var ingestErr bytes.Buffer
			ingest.Stderr = &ingestErr
			if err := ingest.Start(); err != nil {
				t.Fatal(err)
			}
			if err := get.Run(); err != nil {
				t.Fatalf("get: %v", err)
			}
			if err := ingest.Wait(); err != nil {
				t.Fatalf("ingest: %v: %s", err, ingestErr.String())
			}

			copied := startServe(t, nil, "--db", copyDB)
			got, err := getOutput(t, copied, "files", "--all", "-o", "ndjson", "--limit", "100")
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("the copy differs from the source: %d and %d bytes", len(got), len(want))
			}
		})
	}
}

func TestGetOutputs(t *testing.T) {
	s := startServe(t, nil, "--db", "sqlite:"+filepath.Join(t.TempDir(), "get.db"), "--demo", "--region", "Paris")

	t.Run("json page", func(t *testing.T) {
		out, err := getOutput(t, s, "files", "--limit", "3")
		if err != nil {
			t.Fatal(err)
		}
		var page listPage
		if err := json.Unmarshal([]byte(out), &page); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, out)
		}
		if page.Object != "list" || len(page.Data) != 3 || !page.HasMore || page.NextCursor == nil {
			t.Fatalf("page %+v", page)
		}
		// The cursor continues where the page ended.
		next, err := getOutput(t, s, "files", "--limit", "3", "--cursor", *page.NextCursor)
		if err != nil || !strings.Contains(next, `"data":[`) || strings.Contains(next, string(page.Data[0])) {
			t.Errorf("next page: %v\n%s", err, next)
		}
	})

	t.Run("json of every page", func(t *testing.T) {
		out, err := getOutput(t, s, "assets", "--region", "FRA1", "--all", "--limit", "100", "-o", "json")
		if err != nil {
			t.Fatal(err)
		}
		var page listPage
		if err := json.Unmarshal([]byte(out), &page); err != nil {
			t.Fatalf("not JSON: %v", err)
		}
		if len(page.Data) <= 100 || page.HasMore || page.NextCursor != nil {
			t.Errorf("--all -o json: %d items, has_more %v", len(page.Data), page.HasMore)
		}
	})

	t.Run("tables", func(t *testing.T) {
		for _, tt := range []struct {
			args []string
			want []string // lines that start so, in order
		}{
			{[]string{"files", "--limit", "2", "-o", "table"}, []string{"ID  ", "fil_", "fil_", "… more: --cursor "}},
			{[]string{"assets", "--limit", "1", "--region", "FRA1", "-o", "table"}, []string{"ID  ", "ast_", "… more"}},
			{[]string{"regions", "-o", "table"}, []string{"CODE  NAME", "AMS1  Amsterdam"}},
			{[]string{"status", "-o", "table"}, []string{"STATUS   under_maintenance", "REGION   Paris", "UPDATED  ", "", "COMPONENT       STATUS", "API             operational", "Upload Service  under_maintenance"}},
		} {
			out, err := getOutput(t, s, tt.args...)
			if err != nil {
				t.Fatalf("%v: %v", tt.args, err)
			}
			lines := strings.Split(out, "\n")
			for i, prefix := range tt.want {
				if i >= len(lines) || !strings.HasPrefix(lines[i], prefix) {
					t.Errorf("%v printed\n%s\nwant line %d to start with %q", tt.args, out, i+1, prefix)
					break
				}
			}
			// The columns are aligned: every column of the rows starts where
			// its header does.
			if tt.args[0] != "status" {
				for _, line := range lines[1 : len(lines)-1] {
					row := []rune(line) // tabwriter counts runes: "São Paulo"
					for _, at := range columnStarts(lines[0]) {
						if strings.HasPrefix(line, "…") {
							continue
						}
						if at >= len(row) || row[at-1] != ' ' || row[at] == ' ' {
							t.Errorf("%v: columns not aligned:\n%s\n%s", tt.args, lines[0], line)
						}
					}
				}
			}
		}
	})

	t.Run("ndjson is what ingest reads", func(t *testing.T) {
		out, err := getOutput(t, s, "regions", "-o", "ndjson")
		if err != nil {
			t.Fatal(err)
		}
		first := strings.SplitN(out, "\n", 2)[0]
		if first != `{"code":"AMS1","name":"Amsterdam","zone":"eu-west","country":"NL","status":"operational"}` {
			t.Errorf("first region line %s", first)
		}
	})

	t.Run("errors", func(t *testing.T) {
		for _, tt := range []struct {
			args  []string
			usage bool
			want  []string
		}{
			{[]string{"files", "--limit", "500"}, false, []string{"get files: limit must be an integer from 1 to 100", "parameter_invalid", "request req_"}},
			{[]string{"assets", "--region", "XYZ9"}, false, []string{"region_unknown", "request req_"}},
			{[]string{"files", "--api", s.edge}, false, []string{"404 not_found"}},
			{[]string{"files", "--cursor", "bogus"}, false, []string{"cursor_invalid"}},
			{[]string{"regions", "--limit", "5"}, true, []string{"--limit and --cursor are for files and assets"}},
			{[]string{"files", "--region", "FRA1"}, true, []string{"--region is for assets"}},
			{[]string{"files", "-o", "xml"}, true, []string{"table, json or ndjson"}},
			{[]string{"buckets"}, true, []string{`unknown list "buckets"`}},
			{[]string{"files", "--api", "localhost:1"}, true, []string{"http://"}},
		} {
			_, err := getOutput(t, s, tt.args...)
			if err == nil {
				t.Errorf("%v succeeded", tt.args)
				continue
			}
			if errors.Is(err, errUsage) != tt.usage {
				t.Errorf("%v: usage error %v, want %v: %v", tt.args, errors.Is(err, errUsage), tt.usage, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) || strings.Contains(err.Error(), "\n") {
					t.Errorf("%v: error %q, want one line with %q", tt.args, err, w)
				}
			}
		}
	})
}

// columnStarts returns where the columns of a table's header line start,
// after the first.
func columnStarts(header string) []int {
	var starts []int
	for i := 2; i < len(header); i++ {
		if header[i-2] == ' ' && header[i-1] == ' ' && header[i] != ' ' {
			starts = append(starts, i)
		}
	}
	return starts
}

// Against `serve --auth required`, get sends the key of --key or
// CDNAPI_KEY, and without one prints the 401's message and request ID.
func TestGetWithKey(t *testing.T) {
	db := migratedDB(t, "keys.db")
	var key bytes.Buffer
	if err := run(context.Background(), []string{"keys", "create", "--project", "default", "--db", db},
		getenvFrom(nil), strings.NewReader(""), &key, io.Discard); err != nil {
		t.Fatal(err)
	}
	s := startServe(t, nil, "--db", db, "--demo", "--auth", "required")

	_, err := getOutput(t, s, "files", "--limit", "1")
	if err == nil || !strings.Contains(err.Error(), "401 authentication_required") || !strings.Contains(err.Error(), "request req_") {
		t.Errorf("without a key: %v", err)
	}
	_, err = getOutput(t, s, "regions", "--key", "cdk_nope")
	if err == nil || !strings.Contains(err.Error(), "api_key_invalid") {
		t.Errorf("with a bad key: %v", err)
	}

	var stdout bytes.Buffer
	env := getenvFrom(map[string]string{"CDNAPI_API_URL": s.api, "CDNAPI_KEY": strings.TrimSpace(key.String())})
	if err := run(t.Context(), []string{"get", "files", "--limit", "2", "-o", "ndjson"}, env, strings.NewReader(""), &stdout, io.Discard); err != nil {
		t.Fatalf("with CDNAPI_KEY: %v", err)
	}
	if n := strings.Count(stdout.String(), `"id":"fil_`); n != 2 {
		t.Errorf("with CDNAPI_KEY: %d files\n%s", n, stdout.String())
	}
}
