// Package atomicfile replaces files so that a reader sees the old file or
// the new one, never a part, and a failed write leaves no file behind.
package atomicfile

import (
	"io/fs"
	"os"
	"path/filepath"
)

// Write replaces name with data, with mode perm, through a temporary file
// in the same directory, synced, and a rename.
func Write(name string, data []byte, perm fs.FileMode) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return err
	}
	if err = tmp.Chmod(perm); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), name)
}
