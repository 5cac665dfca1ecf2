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

// WriteFileAtomic writes a file whole or not at all: to a temporary name
// beside it, then renamed into place, so a reader (or a process restarted
// after a crash) finds the old content or the new, never a part.
func WriteFileAtomic(name string, data []byte, mode os.FileMode) error {
	tmp := name + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	return os.Rename(tmp, name)
}
