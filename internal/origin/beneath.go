package origin

import (
	"errors"
	"io/fs"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The origin is written by others while it is read: a folder the walk saw
// may be a symbolic link to anywhere by the time a file under it is opened.
// So nothing under the origin is opened by its full path, where the kernel
// would follow a link at any name but the last. Every open starts from the
// origin's own descriptor, taken once a pass, and follows no link at all:
// openat2 with RESOLVE_BENEATH and RESOLVE_NO_SYMLINKS where the kernel has
// it (Linux 5.6), otherwise openat one name at a time, each with
// O_NOFOLLOW. A link met on the way is ELOOP, which the callers take as
// "not a file of the tree".

// openRoot opens the origin itself, which New has resolved: the descriptor
// every open of a pass starts from.
func openRoot(root string) (int, error) {
	return unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
}

// openBeneath opens rel, a slash-separated path relative to the folder
// rootFD ("" for the folder itself), with flags, following no symbolic
// link and never leaving the folder.
func openBeneath(rootFD int, rel string, flags int) (int, error) {
	if rel == "" {
		rel = "."
	}
	flags |= unix.O_NOFOLLOW | unix.O_CLOEXEC
	if fd, err := openat2Beneath(rootFD, rel, flags); !errors.Is(err, errors.ErrUnsupported) {
		return fd, err
	}
	return openEachName(rootFD, rel, flags)
}

// openEachName is openBeneath without openat2: one openat per name, each
// refusing a link, each folder opened relative to the one before.
func openEachName(rootFD int, rel string, flags int) (int, error) {
	if rel == "." {
		return unix.Openat(rootFD, ".", flags, 0)
	}
	names := strings.Split(rel, "/")
	dir := rootFD
	for i, name := range names {
		if name == "" || name == "." || name == ".." {
			if dir != rootFD {
				unix.Close(dir)
			}
			return -1, unix.EXDEV // not a path the walk gives
		}
		f := unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
		if i == len(names)-1 {
			f = flags
		}
		fd, err := openatRetry(dir, name, f)
		if dir != rootFD {
			unix.Close(dir)
		}
		if err != nil {
			return -1, err
		}
		dir = fd
	}
	return dir, nil
}

func openatRetry(dir int, name string, flags int) (int, error) {
	for {
		fd, err := unix.Openat(dir, name, flags, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// lstatBeneath tells what lstat tells of rel under rootFD, reached as
// openBeneath reaches it: its folder without following a link, then the
// entry itself without following it either.
func lstatBeneath(rootFD int, rel string) (entryStat, error) {
	dir, name := "", rel
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		dir, name = rel[:i], rel[i+1:]
	}
	fd, err := openBeneath(rootFD, dir, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return entryStat{}, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return entryStat{}, err
	}
	return statEntry(&st), nil
}

// notThere reports whether err, from opening or stating a path under the
// origin, means that no file of the tree is at the path now: it is gone,
// or a link or a file is where a folder was.
func notThere(err error) bool {
	return errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) ||
		errors.Is(err, unix.EXDEV)
}

// statEntry is what st, of an lstat, tells the walk.
func statEntry(st *unix.Stat_t) entryStat {
	return entryStat{typ: statType(uint32(st.Mode)), size: st.Size, mtime: time.Unix(st.Mtim.Unix()),
		dev: uint64(st.Dev), ino: uint64(st.Ino)}
}

// statType is the type of a file as fs.FileMode tells it, from stat's mode.
func statType(mode uint32) fs.FileMode {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return 0
	case unix.S_IFDIR:
		return fs.ModeDir
	case unix.S_IFLNK:
		return fs.ModeSymlink
	}
	return fs.ModeDevice // or a pipe, a socket: special all the same
}
