package uploads

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// The folders of an uploads root. Every one is on the root's filesystem, so
// that every move between them is a rename: a file is in one of them, whole,
// at every instant, a crash included.
const (
	// Incoming is where the upload server writes, one folder per project.
	// No edge serves it and no list shows it.
	Incoming = "incoming"
	// Origin holds the files scanned clean, one folder per project: the
	// origin that edges serve and that the files lists show.
	Origin = "origin"
	// Quarantine holds the files found infected, one folder per project.
	// Nothing serves or lists it.
	Quarantine = "quarantine"
	// Staging holds the files being scanned. A file is moved here from
	// Incoming before it is scanned, so that what is scanned is what is
	// promoted: the upload server cannot replace it in between, and a
	// crash leaves it here, to be scanned again, never in the origin.
	Staging = "staging"
)

// Tree is an uploads root, its four folders held open. Every path inside it
// is resolved relative to one of them and beneath it, never through a
// symbolic link, so no name that an uploader or anyone who can write into
// the tree controls can redirect a read or a move outside it.
type Tree struct {
	root                                string
	incoming, origin, quarantine, stage int // folder descriptors
}

// OpenTree opens the uploads root, creating its folders where missing:
// incoming and origin readable by all (the upload server and the origin's
// web server run as other users), staging and quarantine private.
func OpenTree(root string) (*Tree, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	t := &Tree{root: abs, incoming: -1, origin: -1, quarantine: -1, stage: -1}
	for _, d := range []struct {
		name string
		perm os.FileMode
		fd   *int
	}{
		{Incoming, 0o755, &t.incoming},
		{Origin, 0o755, &t.origin},
		{Quarantine, 0o700, &t.quarantine},
		{Staging, 0o700, &t.stage},
	} {
		p := filepath.Join(abs, d.name)
		if err := os.MkdirAll(p, d.perm); err != nil {
			t.Close()
			return nil, err
		}
		fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Close()
			return nil, &os.PathError{Op: "open", Path: p, Err: err}
		}
		*d.fd = fd
	}
	// The upload server's temporary files (nginx's client_body_temp_path):
	// on the root's filesystem, so that its rename into incoming is one.
	if err := os.MkdirAll(filepath.Join(abs, "tmp"), 0o755); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// Root returns the uploads root, absolute.
func (t *Tree) Root() string { return t.root }

// Dir returns the absolute path of the folder of project in one of the
// tree's folders (Incoming, Origin, Quarantine).
func (t *Tree) Dir(folder, project string) string { return filepath.Join(t.root, folder, project) }

// Close releases the folders.
func (t *Tree) Close() error {
	for _, fd := range []int{t.incoming, t.origin, t.quarantine, t.stage} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
	return nil
}

// errSymlink is the error of a path through a symbolic link.
var errSymlink = errors.New("a symbolic link is in the way")

// beneath opens the path rel ("a/b/c", no "." or ".." names) relative to the
// folder dirfd with flags, resolving every name beneath dirfd and through no
// symbolic link: openat2 with RESOLVE_BENEATH and RESOLVE_NO_SYMLINKS. The
// kernel checks both atomically, so a folder swapped for a link between two
// calls cannot redirect the open.
func beneath(dirfd int, rel string, flags int) (int, error) {
	if rel == "" {
		rel = "."
	}
	fd, err := unix.Openat2(dirfd, rel, &unix.OpenHow{
		Flags:   uint64(flags | unix.O_CLOEXEC | unix.O_NOFOLLOW),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if errors.Is(err, unix.ENOSYS) {
		return beneathByName(dirfd, rel, flags)
	}
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) || linkNotDir(dirfd, rel, err) {
		err = errSymlink
	}
	return fd, err
}

// linkNotDir reports whether err, of an open of rel beneath dirfd with
// O_DIRECTORY and O_NOFOLLOW, is the ENOTDIR that Linux gives for a link
// as the last name, rather than ELOOP. The lstat only names the error; it
// opens nothing.
func linkNotDir(dirfd int, rel string, err error) bool {
	var st unix.Stat_t
	return errors.Is(err, unix.ENOTDIR) &&
		unix.Fstatat(dirfd, rel, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK
}

// beneathByName is beneath for kernels before 5.6, which lack openat2: one
// openat per name, each refusing a symbolic link.
func beneathByName(dirfd int, rel string, flags int) (int, error) {
	names := strings.Split(rel, "/")
	fd := dirfd
	for i, name := range names {
		f := unix.O_RDONLY | unix.O_DIRECTORY
		if i == len(names)-1 {
			f = flags
		}
		next, err := unix.Openat(fd, name, f|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		link := errors.Is(err, unix.ELOOP) || linkNotDir(fd, name, err)
		if fd != dirfd {
			unix.Close(fd)
		}
		if link {
			return -1, errSymlink
		}
		if err != nil {
			return -1, err
		}
		fd = next
	}
	return fd, nil
}

// makeDirs opens the folder rel beneath dirfd, creating each missing folder
// on the way with perm, and refusing a symbolic link or a file in the way.
func makeDirs(dirfd int, rel string, perm uint32) (int, error) {
	fd, err := unix.Dup(dirfd)
	if err != nil {
		return -1, err
	}
	if rel == "" || rel == "." {
		return fd, nil
	}
	for _, name := range strings.Split(rel, "/") {
		if err := unix.Mkdirat(fd, name, perm); err != nil && !errors.Is(err, unix.EEXIST) {
			unix.Close(fd)
			return -1, err
		}
		next, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if errors.Is(err, unix.ELOOP) {
			return -1, errSymlink
		}
		if err != nil {
			return -1, fmt.Errorf("%s: %w", name, err)
		}
		fd = next
	}
	return fd, nil
}

// split returns the folder and the name of the path rel ("" for a name at
// the top).
func split(rel string) (dir, name string) {
	dir, name = path.Split(rel)
	return strings.TrimSuffix(dir, "/"), name
}
