package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// The README is the way in and docs/ holds the rest, so a link between them
// that points nowhere strands a reader. These tests keep every relative link
// of README.md and docs/*.md pointing at a file that exists and, for a
// #fragment, at a heading of that file; and the README's table of commands
// naming every command the program has.

// markdownFiles returns README.md and docs/*.md, as paths from this
// package's folder.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil || len(docs) == 0 {
		t.Fatalf("no docs/*.md: %v", err)
	}
	return append([]string{"../../README.md"}, docs...)
}

var (
	fencePattern = regexp.MustCompile("(?ms)^ {0,3}```.*?^ {0,3}```[ \t]*$")
	codePattern  = regexp.MustCompile("`[^`]*`")
	linkPattern  = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	headPattern  = regexp.MustCompile(`(?m)^ {0,3}#{1,6}[ \t]+(.*?)[ \t#]*$`)
)

// prose returns text without its fenced blocks and code spans, where a
// "# comment" is not a heading and "[a](b)" not a link.
func prose(text string) string {
	return codePattern.ReplaceAllString(fencePattern.ReplaceAllString(text, ""), "")
}

// anchors returns the fragments GitHub gives the headings of text: lower
// case, letters, digits, '-' and '_' kept, spaces made '-', everything
// else dropped; a repeated one gets -1, -2, ….
func anchors(text string) map[string]bool {
	seen := map[string]int{}
	out := map[string]bool{}
	for _, m := range headPattern.FindAllStringSubmatch(fencePattern.ReplaceAllString(text, ""), -1) {
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

func TestMarkdownLinks(t *testing.T) {
	texts := map[string]string{} // read once: a file's own text, or a target's
	read := func(path string) (string, error) {
		if s, ok := texts[path]; ok {
			return s, nil
		}
		b, err := os.ReadFile(path)
		texts[path] = string(b)
		return string(b), err
	}
	links := 0
	for _, file := range markdownFiles(t) {
		text, err := read(file)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(file, "../../")
		for _, m := range linkPattern.FindAllStringSubmatch(prose(text), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			links++
			path, fragment, _ := strings.Cut(target, "#")
			resolved := file
			if path != "" {
				resolved = filepath.Join(filepath.Dir(file), path)
				if _, err := os.Stat(resolved); err != nil {
					t.Errorf("%s links %s: no such file", name, target)
					continue
				}
			}
			if fragment == "" {
				continue
			}
			if !strings.HasSuffix(resolved, ".md") {
				t.Errorf("%s links %s: a fragment of a file that is not markdown", name, target)
				continue
			}
			linked, err := read(resolved)
			if err != nil {
				t.Errorf("%s links %s: %v", name, target, err)
				continue
			}
			if !anchors(linked)[fragment] {
				t.Errorf("%s links %s: %s has no heading #%s", name, target, filepath.Base(resolved), fragment)
			}
		}
	}
	if links < 50 {
		t.Errorf("found %d relative links in README.md and docs/; the pattern must be broken", links)
	}
}

// TestAnchors pins the slug rule on headings the docs have.
func TestAnchors(t *testing.T) {
	got := anchors("# A\n## HTTP/2 and compression\n### Where SQLite's memory goes\n```sh\n# not a heading\n```\n## Reads while data is written, and for hours\n## A\n")
	for _, want := range []string{"a", "http2-and-compression", "where-sqlites-memory-goes", "reads-while-data-is-written-and-for-hours", "a-1"} {
		if !got[want] {
			t.Errorf("no anchor %q in %v", want, got)
		}
	}
	if got["not-a-heading"] {
		t.Errorf("a comment in a code block became an anchor")
	}
}

// TestReadmeCommandsTable: every command of the program has its row in the
// README's table of commands.
func TestReadmeCommandsTable(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(readme), "\n## Commands\n")
	if !ok {
		t.Fatal("README.md has no ## Commands")
	}
	table, _, _ = strings.Cut(table, "\n## ")
	for _, c := range commands {
		if !strings.Contains(table, "\n| `cdnapi "+c.name+" ") && !strings.Contains(table, "\n| `cdnapi "+c.name+"`") {
			t.Errorf("README.md's Commands table has no row for cdnapi %s", c.name)
		}
	}
}
