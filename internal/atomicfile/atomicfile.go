// Package atomicfile replaces files whole: a reader sees the old content or
// the new, never a mix, even if the writer dies halfway (a CNI configuration
// a runtime reads, a plugin binary it runs, a node's network configuration).
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write writes data to a file beside path, syncs it, sets mode and renames
// it over path.
func Write(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // gone after the rename; removes it after a failure
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
