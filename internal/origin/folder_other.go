//go:build !(linux && (amd64 || arm64))

package origin

import (
	"os"
	"path/filepath"
)

// folder reads the entries of one folder through the os package: the
// portable way, for the systems folder_linux.go does not cover (cdnapi's
// releases for darwin).
type folder struct {
	f     *os.File
	abs   string
	names []string
	err   error // of reading the names: next returns it after them
}

const folderBuffer = 0

func openFolder(abs string, _ *[]byte) (*folder, error) {
	f, err := os.Open(abs)
	if err != nil {
		return nil, err
	}
	names, err := f.Readdirnames(-1)
	if err != nil && len(names) == 0 {
		f.Close()
		return nil, err
	}
	return &folder{f: f, abs: abs, names: names, err: err}, nil
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
	fi, err := os.Lstat(filepath.Join(f.abs, string(name)))
	if err != nil {
		return entryStat{}, err
	}
	return entryStat{typ: fi.Mode().Type(), size: fi.Size(), mtime: fi.ModTime()}, nil
}
