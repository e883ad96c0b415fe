package clamd

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// Binary returns the path of clamd: clamd on PATH, else Debian's
// /usr/sbin/clamd, which is not on the PATH of users other than root.
func Binary() (string, error) {
	if p, err := exec.LookPath("clamd"); err == nil {
		return p, nil
	}
	const debian = "/usr/sbin/clamd"
	if fi, err := os.Stat(debian); err == nil && !fi.IsDir() {
		return debian, nil
	}
	return "", errors.New("clamd is not installed (apt-get install clamav-daemon)")
}

// Config is a clamd of its own, as the tests (internal/clamdtest) and the
// CDN on one machine (internal/localcdn) run one: in the foreground, on a
// unix socket, over a database folder of their own.
type Config struct {
	Socket    string // the unix socket's path
	Database  string // DatabaseDirectory
	Temporary string // TemporaryDirectory; clamd's default when empty
	Log       string // LogFile
	// StreamMaxLength is the most INSTREAM accepts, in bytes; zero keeps
	// clamd's default (25 MiB).
	StreamMaxLength int64
	// TCPPort, when not zero, makes clamd listen on 127.0.0.1 too.
	TCPPort int
}

// WriteConfig writes c as a clamd.conf at path.
func WriteConfig(path string, c Config) error {
	conf := []string{
		"Foreground yes",
		"LocalSocket " + c.Socket,
		"DatabaseDirectory " + c.Database,
		"LogFile " + c.Log,
		"LogTime yes",
		// The database does not change behind the owner's back: no
		// freshclam runs here.
		"SelfCheck 0",
	}
	if c.Temporary != "" {
		conf = append(conf, "TemporaryDirectory "+c.Temporary)
	}
	if c.StreamMaxLength > 0 {
		conf = append(conf, "StreamMaxLength "+strconv.FormatInt(c.StreamMaxLength, 10))
	}
	if c.TCPPort != 0 {
		conf = append(conf, "TCPAddr 127.0.0.1", "TCPSocket "+strconv.Itoa(c.TCPPort))
	}
	return os.WriteFile(path, []byte(strings.Join(conf, "\n")+"\n"), 0o644)
}
