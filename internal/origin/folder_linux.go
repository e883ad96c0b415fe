//go:build linux && (amd64 || arm64)

package origin

import (
	"encoding/binary"
	"io/fs"
	"unsafe"

	"golang.org/x/sys/unix"
)

// folder reads the entries of one folder through getdents, into a buffer
// its walker reuses, and lstats each by its name relative to the folder
// (fstatat): the names are read without allocating, and each lstat passes
// the name where getdents left it, NUL-terminated, instead of a copy.
type folder struct {
	fd     int
	buf    []byte
	n, off int
}

// folderBuffer is the size of a walker's getdents buffer: about 1,000
// entries a call.
const folderBuffer = 32 << 10

// openFolder opens the folder rel beneath the origin rootFD, following no
// symbolic link (see openBeneath).
func openFolder(rootFD int, rel string, buf *[]byte) (*folder, error) {
	fd, err := openBeneath(rootFD, rel, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: quoteName(rel), Err: err}
	}
	if *buf == nil {
		*buf = make([]byte, folderBuffer)
	}
	return &folder{fd: fd, buf: *buf}, nil
}

func (f *folder) close() { unix.Close(f.fd) }

// next returns the name of the next entry but "." and "..", nil at the end.
// The name is valid until the next call.
func (f *folder) next() ([]byte, error) {
	for {
		if f.off >= f.n {
			n, err := unix.Getdents(f.fd, f.buf)
			if err != nil {
				return nil, err
			}
			if n <= 0 {
				return nil, nil
			}
			f.n, f.off = n, 0
		}
		// struct linux_dirent64: ino u64, off s64, reclen u16, type u8, name.
		rec := f.buf[f.off:f.n]
		reclen := int(binary.NativeEndian.Uint16(rec[16:18]))
		f.off += reclen
		name := rec[19:reclen]
		for i, c := range name {
			if c == 0 {
				name = name[:i]
				break
			}
		}
		if len(name) == 0 || string(name) == "." || string(name) == ".." {
			continue
		}
		return name, nil
	}
}

// lstat returns what lstat tells of the entry name, which next returned.
func (f *folder) lstat(name []byte) (entryStat, error) {
	var st unix.Stat_t
	// name is followed by its NUL in f.buf (getdents ends every name with
	// one): the path fstatat reads.
	_, _, e := unix.Syscall6(unix.SYS_NEWFSTATAT, uintptr(f.fd), uintptr(unsafe.Pointer(unsafe.SliceData(name))),
		uintptr(unsafe.Pointer(&st)), unix.AT_SYMLINK_NOFOLLOW, 0, 0)
	if e != 0 {
		return entryStat{}, e
	}
	return statEntry(&st), nil
}
