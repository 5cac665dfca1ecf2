// Package dirs holds the node side's small filesystem helpers.
package dirs

import (
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// LastChange is the latest modification time in the tree at p (symbolic
// links not followed): when anything in it was last written.
func LastChange(p string) (time.Time, error) {
	var last time.Time
	err := filepath.WalkDir(p, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.ModTime().After(last) {
			last = info.ModTime()
		}
		return nil
	})
	return last, err
}

// WriteFileAtomic writes a file whole or not at all: to a temporary file
// beside it, then renamed into place, so a reader (or a process restarted
// after a crash) finds the old content or the new, never a part. The
// temporary name is unique: writers of the same file at once (two
// containers of one application starting together) each rename their own
// whole copy, the last one wins.
func WriteFileAtomic(name string, data []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".tmp-")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(mode)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, name)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}
