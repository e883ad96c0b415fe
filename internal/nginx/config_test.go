package nginx

import (
	"strings"
	"testing"
)

// TestConfigRefusesBadInput: what would make a broken or surprising
// configuration is refused before nginx sees it.
func TestConfigRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	format := dir + "/fmt.conf"
	for _, c := range []struct {
		name string
		site Site
		want string
	}{
		{"lower-case region", Edge{Region: "fra1", Origin: "http://127.0.0.1:1", LogFormat: format}, "region"},
		{"region too long", Edge{Region: "FRA12", Origin: "http://127.0.0.1:1", LogFormat: format}, "region"},
		{"origin without scheme", Edge{Region: "FRA1", Origin: "127.0.0.1:1", LogFormat: format}, "origin"},
		{"https origin", Edge{Region: "FRA1", Origin: "https://127.0.0.1:1", LogFormat: format}, "origin"},
		{"origin with a path", Edge{Region: "FRA1", Origin: "http://127.0.0.1:1/static", LogFormat: format}, "origin"},
		{"log path with $", Edge{Region: "FRA1", Origin: "http://127.0.0.1:1", LogFormat: format, LogPath: dir + "/$host.log"}, "$"},
		{"origin root missing", Origin{Root: dir + "/nope"}, "not a directory"},
		{"origin root with a newline", Origin{Root: dir + "/a\nb"}, "not a directory"},
		{"upload root missing", Upload{Root: dir + "/nope", Auth: "127.0.0.1:1"}, "not a directory"},
		{"upload auth without port", Upload{Root: dir, Auth: "127.0.0.1"}, "auth"},
		{"upload auth a URL", Upload{Root: dir, Auth: "http://127.0.0.1:1"}, "auth"},
		{"upload auth with ;", Upload{Root: dir, Auth: "127.0.0.1:1;x"}, "auth"},
		{"upload max bytes negative", Upload{Root: dir, Auth: "127.0.0.1:1", MaxBytes: -1}, "max bytes"},
		{"upload log path with $", Upload{Root: dir, Auth: "127.0.0.1:1", LogPath: dir + "/$host.log"}, "$"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := mainConfig(dir, "127.0.0.1:1", c.site)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("mainConfig: %v, want an error about %q", err, c.want)
			}
		})
	}
}

// TestConfigQuotesPaths: a directory with spaces, quotes or backslashes is
// one nginx string.
func TestConfigQuotesPaths(t *testing.T) {
	for in, want := range map[string]string{
		`/tmp/a b`:     `"/tmp/a b"`,
		`/tmp/say "x"`: `"/tmp/say \"x\""`,
		`/tmp/a\b`:     `"/tmp/a\\b"`,
		`/tmp/größe`:   `"/tmp/größe"`,
	} {
		if got, err := quote(in); err != nil || got != want {
			t.Errorf("quote(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
}
