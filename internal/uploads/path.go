package uploads

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/cdnapi/cdnapi/internal/origin"
)

// The bounds of an upload's path: a name as long as Linux allows one, and a
// path well within what a URL and a log line carry.
const (
	maxName = 255
	maxPath = 1024
)

// PathOf returns the path, relative to a project's folder, that the request
// target raw names (nginx's $request_uri: the path as the client sent it,
// and its query string, which is ignored), or an error whose text says, in
// one sentence, why no file may be written or deleted there.
//
// The path is decoded once, as nginx decodes it, and refused when nginx
// would change it further: a "." or ".." name, an empty name ("//"), a
// trailing "/". So the path checked here is the path nginx writes, and no
// encoding ("%2e%2e", "%2f") can reach another folder. Each name must also
// be one the files list shows (origin.CheckName).
func PathOf(raw string) (string, error) {
	p, _, _ := strings.Cut(raw, "?")
	if !strings.HasPrefix(p, "/") {
		return "", errors.New("the path must start with \"/\"")
	}
	dec, err := url.PathUnescape(p)
	if err != nil {
		return "", errors.New("the path has a malformed percent-encoding")
	}
	rel := dec[1:]
	switch {
	case rel == "":
		return "", errors.New("the path must name a file, such as /img/logo.png")
	case len(rel) > maxPath:
		return "", fmt.Errorf("the path must be at most %d bytes long", maxPath)
	case strings.HasSuffix(rel, "/"):
		return "", errors.New("the path must name a file, not a folder: it may not end with \"/\"")
	case strings.ContainsRune(rel, '\\'):
		return "", errors.New("the path may not contain a backslash")
	}
	for name := range strings.SplitSeq(rel, "/") {
		switch {
		case name == "":
			return "", errors.New("the path may not contain an empty name (\"//\")")
		case name == "." || name == "..":
			return "", errors.New("the path may not contain \".\" or \"..\": it must stay inside the project's folder")
		case len(name) > maxName:
			return "", fmt.Errorf("each name of the path must be at most %d bytes long", maxName)
		}
		if err := origin.CheckName(name); err != nil {
			return "", err
		}
	}
	return rel, nil
}

// Errors of Check, which the upload server's client sees.
var (
	errThroughLink = errors.New("the path goes through a symbolic link in the project's folder; upload to another path")
	errFolder      = errors.New("the path names a folder, or a file where a folder is needed; upload to another path")
)

// Check reports whether a file of project at rel (from PathOf) may be
// written (delete false) or deleted (delete true) through the upload
// server: nothing on the way, in the project's incoming folder or in its
// origin, where a clean upload will go and whence a delete removes, may be
// a symbolic link, and the path must name a file where it names anything.
// nginx follows links when it writes, so a link left in the tree would
// otherwise let an upload land outside it. Names not there yet are fine:
// the upload server creates them.
//
// Its errors that are not errThroughLink or errFolder mean the tree could not be
// read.
func (t *Tree) Check(project, rel string, delete bool) error {
	trees := []int{t.origin}
	if !delete {
		trees = append(trees, t.incoming)
	}
	for _, root := range trees {
		if err := checkBeneath(root, project+"/"+rel); err != nil {
			return err
		}
	}
	return nil
}

// checkBeneath walks rel beneath dirfd name by name, without following
// links, and stops at the first name that does not exist.
func checkBeneath(dirfd int, rel string) error {
	names := strings.Split(rel, "/")
	fd := dirfd
	defer func() {
		if fd != dirfd {
			unix.Close(fd)
		}
	}()
	for i, name := range names {
		var st unix.Stat_t
		err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		if err != nil {
			return err
		}
		last := i == len(names)-1
		switch typ := st.Mode & unix.S_IFMT; {
		case typ == unix.S_IFLNK:
			return errThroughLink
		case last && typ != unix.S_IFREG, !last && typ != unix.S_IFDIR:
			return errFolder
		case last:
			return nil
		}
		next, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			return errThroughLink // replaced since the stat
		}
		if err != nil {
			return err
		}
		if fd != dirfd {
			unix.Close(fd)
		}
		fd = next
	}
	return nil
}

// Refused reports whether err, from Check, refuses the request (the client's
// error) rather than saying that the tree could not be read.
func Refused(err error) bool { return errors.Is(err, errThroughLink) || errors.Is(err, errFolder) }
