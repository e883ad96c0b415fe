//go:build !(linux && (amd64 || arm64))

package origin

import (
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// folder reads the entries of one folder through the os package: the
// portable way, for the systems folder_linux.go does not cover (cdnapi's
// releases for darwin). The folder is opened as openBeneath opens, and its
// entries are stated relative to it.
type folder struct {
	f     *os.File
	names []string
	err   error // of reading the names: next returns it after them
}

const folderBuffer = 0

func openFolder(rootFD int, rel string, _ *[]byte) (*folder, error) {
	fd, err := openBeneath(rootFD, rel, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: quoteName(rel), Err: err}
	}
	f := os.NewFile(uintptr(fd), rel)
	names, err := f.Readdirnames(-1)
	if err != nil && len(names) == 0 {
		f.Close()
		return nil, err
	}
	return &folder{f: f, names: names, err: err}, nil
}

func (f *folder) close() { f.f.Close() }

func (f *folder) next() ([]byte, error) {
	if len(f.names) == 0 {
		err := f.err
		f.err = nil
		return nil, err
	}
	name := f.names[0]
	f.names = f.names[1:]
	return []byte(name), nil
}

func (f *folder) lstat(name []byte) (entryStat, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(int(f.f.Fd()), string(name), &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return entryStat{}, err
	}
	return statEntry(&st), nil
}
