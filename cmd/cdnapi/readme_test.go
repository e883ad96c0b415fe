package main

import (
	"compress/gzip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cdnapi/cdnapi"
)

// The examples of an origin (in the README) and of loading data (in
// docs/data.md), run as written by sh in a folder of their own, with cdnapi
// this test binary (TestMain turns it into the program).

// readmeBlocks returns the ```sh blocks of the section under heading in
// file, a path from the repository's root (README.md, docs/data.md), up
// to the next heading of level 2 or above.
func readmeBlocks(t *testing.T, file, heading string) []string {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join("../..", file))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("%s has no %q", file, heading)
	}
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	var blocks []string
	for _, m := range regexp.MustCompile("(?s)\n```sh\n(.*?)\n```\n").FindAllStringSubmatch(section, -1) {
		blocks = append(blocks, m[1])
	}
	if len(blocks) == 0 {
		t.Fatalf("%s's %q has no sh example", file, heading)
	}
	return blocks
}

// shell runs script with sh -e in dir, cdnapi being this program, and
// returns what it printed on stdout and stderr.
func shell(t *testing.T, dir, script string) string {
	t.Helper()
	cmd := exec.Command("sh", "-ec", `cdnapi() { "$CDNAPI_BIN" -- "$@"; }
`+script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CDNAPI_TEST_AS_MAIN=1", "CDNAPI_BIN="+os.Args[0])
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s\n%v:\n%s", script, err, out)
	}
	return string(out)
}

// commentPattern makes the comment after a command's #, where … stands for
// anything, into a pattern of the line the command prints.
func commentPattern(comment string) *regexp.Regexp {
	parts := strings.Split(strings.TrimSpace(comment), "…")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile(`(?m)^` + strings.Join(parts, ".*") + `$`)
}

// TestOriginREADMEExample: the README's example of "An origin as the files list",
// line by line; each sync prints the summary its comment shows. The last
// line, a sync that follows until stopped, is left out: TestFollow and
// TestUp cover it.
func TestOriginREADMEExample(t *testing.T) {
	dir := t.TempDir()
	blocks := readmeBlocks(t, "README.md", "## An origin as the files list")
	syncs := 0
	for _, line := range strings.Split(blocks[0], "\n") {
		command, comment, _ := strings.Cut(line, "#")
		if strings.HasSuffix(strings.TrimSpace(command), "&") {
			continue
		}
		out := shell(t, dir, command)
		if strings.Contains(command, "origin sync") {
			syncs++
			if !commentPattern(comment).MatchString(out) {
				t.Errorf("%s printed %q; the README says %q", strings.TrimSpace(command), out, strings.TrimSpace(comment))
			}
		}
	}
	if syncs != 3 {
		t.Errorf("ran %d syncs of the README; want its 3", syncs)
	}
}

// TestLoadingDataREADMEExample: the examples of "Loading data" (moved
// from the README to docs/data.md), each block
// as one script: regions, files, assets (requests.ndjson.gz made of the
// line its comment shows) and the operators' commands.
func TestLoadingDataREADMEExample(t *testing.T) {
	dir := t.TempDir()
	blocks := readmeBlocks(t, "docs/data.md", "## Loading data")
	if len(blocks) != 4 {
		t.Fatalf("Loading data has %d sh examples; this test knows 4", len(blocks))
	}

	shell(t, dir, blocks[0])
	if out := shell(t, dir, "cdnapi regions list"); !strings.Contains(out, "FRA1") || !strings.Contains(out, "IAD1") {
		t.Errorf("after the regions example, regions list printed\n%s", out)
	}

	shell(t, dir, blocks[1])
	files, err := openTestStore(t, "sqlite:"+filepath.Join(dir, "cdnapi.db")).ListFiles(t.Context(), cdnapi.FileQuery{Project: "acme", Limit: 10})
	if err != nil || len(files) != 1 || files[0].Filename != "report.pdf" {
		t.Errorf("after the files example, acme's files are %+v, %v; want report.pdf", files, err)
	}

	// The assets example reads requests.ndjson.gz, of lines like the one
	// its comment shows.
	_, line, ok := strings.Cut(blocks[2], "# each line: ")
	if !ok {
		t.Fatalf("the assets example shows no line: %s", blocks[2])
	}
	f, err := os.Create(filepath.Join(dir, "requests.ndjson.gz"))
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	zw.Write([]byte(strings.TrimSpace(line) + "\n"))
	zw.Close()
	f.Close()
	if out := shell(t, dir, blocks[2]); !strings.Contains(out, "ingested 1 asset") {
		t.Errorf("the assets example printed %q, want 1 asset ingested", out)
	}

	out := shell(t, dir, blocks[3])
	for _, want := range []string{"FRA1", "under_maintenance", "Virus Scanning"} {
		if !strings.Contains(out, want) {
			t.Errorf("the operators' example printed no %q:\n%s", want, out)
		}
	}
}

// TestREADMELogFormat: the log_format the docs show (docs/data.md,
// "Following edges"), which the rejection of a combined line points to, is
// the shipped one.
func TestREADMELogFormat(t *testing.T) {
	conf, err := os.ReadFile("../../deploy/nginx/cdnapi-log.conf")
	if err != nil {
		t.Fatal(err)
	}
	_, format, ok := strings.Cut(string(conf), "log_format cdnapi")
	if !ok {
		t.Fatal("deploy/nginx/cdnapi-log.conf has no log_format cdnapi")
	}
	readme, err := os.ReadFile("../../docs/data.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(readme), "\n## Following edges\n")
	section, _, _ = strings.Cut(section, "\n## ")
	if !strings.Contains(section, "```nginx\nlog_format cdnapi"+strings.TrimRight(format, "\n ")+"\n```") {
		t.Error(`docs/data.md's "Following edges" does not show the log_format of deploy/nginx/cdnapi-log.conf`)
	}
}
