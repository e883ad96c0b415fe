package uploads

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPathOf(t *testing.T) {
	for _, tt := range []struct {
		raw, want string // want "" means refused
	}{
		{"/img/logo.png", "img/logo.png"},
		{"/logo.png?v=2", "logo.png"},
		{"/a%20b/%C3%A9t%C3%A9.txt", "a b/été.txt"},
		{"/a+b.txt", "a+b.txt"},
		{"", ""},
		{"/", ""},
		{"img/logo.png", ""},                 // not absolute
		{"http://evil/x", ""},                // absolute form
		{"/../etc/passwd", ""},               // traversal
		{"/a/../../etc/passwd", ""},          // traversal, deeper
		{"/%2e%2e/etc/passwd", ""},           // encoded traversal
		{"/%2E%2E%2Fetc%2Fpasswd", ""},       // encoded dots and slashes
		{"/a/%2e/b", ""},                     // "."
		{"/a//b", ""},                        // empty name
		{"/a%2F%2Fb", ""},                    // encoded empty name
		{"/img/", ""},                        // a folder
		{"/.env", ""},                        // hidden
		{"/img/.htaccess", ""},               // hidden, deeper
		{"/%2eenv", ""},                      // encoded hidden
		{"/a%5Cb", ""},                       // backslash
		{"/a%00b", ""},                       // NUL
		{"/a%0Ab", ""},                       // a control character
		{"/%ff.txt", ""},                     // not UTF-8
		{"/%zz", ""},                         // malformed escape
		{"/" + strings.Repeat("a", 256), ""}, // name too long
	} {
		got, err := PathOf(tt.raw)
		if tt.want == "" {
			if err == nil {
				t.Errorf("PathOf(%q) = %q, want it refused", tt.raw, got)
			} else if strings.ContainsAny(err.Error(), "\n") || err.Error() == "" {
				t.Errorf("PathOf(%q): error %q is not one line", tt.raw, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("PathOf(%q) = %q, %v; want %q", tt.raw, got, err, tt.want)
		}
	}
}

// TestCheck checks that a path through a symbolic link, in a project's
// incoming folder or in its origin, is refused, and so is a path that
// names a folder, while paths yet to be made are allowed.
func TestCheck(t *testing.T) {
	root := t.TempDir()
	tree, err := OpenTree(root)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	outside := t.TempDir()
	mk := func(p string) {
		if err := os.MkdirAll(filepath.Join(root, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := func(p string) {
		if err := os.Symlink(outside, filepath.Join(root, p)); err != nil {
			t.Fatal(err)
		}
	}
	mk("incoming/p/img")
	mk("origin/p/docs")
	link("incoming/p/linked")
	link("origin/p/olinked")
	mk("incoming/q")
	link("incoming/q/x.txt") // a link where the file goes
	link("origin/r")         // a whole project's origin
	if err := os.WriteFile(filepath.Join(root, "origin/p/docs/a.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	for _, tt := range []struct {
		project, rel string
		delete       bool
		want         error // nil: allowed
	}{
		{"p", "img/logo.png", false, nil},
		{"p", "new/deep/file.txt", false, nil},
		{"new", "file.txt", false, nil},
		{"p", "docs/a.txt", true, nil},
		{"p", "linked/x.txt", false, errThroughLink},
		{"p", "olinked/x.txt", false, errThroughLink}, // a clean upload would go there
		{"p", "olinked/x.txt", true, errThroughLink},
		{"q", "x.txt", false, errThroughLink},
		{"r", "x.txt", false, errThroughLink},
		{"p", "docs", false, errFolder},
		{"p", "docs", true, errFolder},
		{"p", "docs/a.txt/b", false, errFolder},
	} {
		err := tree.Check(tt.project, tt.rel, tt.delete)
		if err != tt.want {
			t.Errorf("Check(%s, %s, delete %v) = %v, want %v", tt.project, tt.rel, tt.delete, err, tt.want)
		}
		if err != nil && !Refused(err) {
			t.Errorf("Check(%s, %s): %v is not a refusal", tt.project, tt.rel, err)
		}
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("the folder outside the tree holds %d entries", len(entries))
	}
}
