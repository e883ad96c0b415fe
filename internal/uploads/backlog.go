package uploads

import (
	"errors"
	"io/fs"
	"path/filepath"
	"syscall"
	"time"
)

// OldestWaiting returns since when the file that has waited longest for a
// scan has waited, over the incoming and staging folders of the uploads
// root; zero when none waits. A file's wait starts with its last change of
// status (ctime): the upload server's rename into incoming, or the Gate's
// into staging. Not its modification time, which a client sets with a Date
// header.
func OldestWaiting(root string) (time.Time, error) {
	var oldest time.Time
	for _, folder := range []string{Incoming, Staging} {
		dir := filepath.Join(root, folder)
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if p != dir && errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			if d.IsDir() && p != dir && d.Name()[0] == '.' {
				return fs.SkipDir
			}
			if !d.Type().IsRegular() || d.Name()[0] == '.' {
				return nil
			}
			fi, err := d.Info()
			if err != nil {
				return nil // gone since the folder was read: promoted
			}
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				ctime := time.Unix(st.Ctim.Unix())
				if oldest.IsZero() || ctime.Before(oldest) {
					oldest = ctime
				}
			}
			return nil
		})
		if err != nil {
			return time.Time{}, err
		}
	}
	return oldest, nil
}
