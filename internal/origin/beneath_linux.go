package origin

import (
	"errors"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// noOpenat2 is set once openat2 is known missing (a kernel before 5.6, or
// a seccomp filter that does not know it).
var noOpenat2 atomic.Bool

// openat2Beneath opens rel beneath dirfd through openat2, refusing any
// symbolic link and any way out of dirfd; errors.ErrUnsupported if the
// kernel has no openat2.
func openat2Beneath(dirfd int, rel string, flags int) (int, error) {
	if noOpenat2.Load() {
		return -1, errors.ErrUnsupported
	}
	how := unix.OpenHow{Flags: uint64(flags),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	for range 16 {
		fd, err := unix.Openat2(dirfd, rel, &how)
		switch err {
		case nil:
			return fd, nil
		case unix.ENOSYS, unix.EPERM:
			// EPERM: seccomp filters older than openat2 answer so.
			noOpenat2.Store(true)
			return -1, errors.ErrUnsupported
		case unix.EAGAIN, unix.EINTR:
			// EAGAIN: a rename elsewhere ran during the lookup, which
			// RESOLVE_BENEATH then refuses to trust; try again.
			continue
		default:
			return -1, err
		}
	}
	return -1, errors.ErrUnsupported // renamed under us all along: one name at a time
}
