// Package secretfile creates small secret files (keys, tokens) safely when several processes
// may start at once: the content is written to a private temporary file and linked into
// place, so no reader ever sees a half-written secret and a second creator never replaces
// the first one's.
package secretfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// CreateExclusive writes content to path with mode 0600 (creating parent directories with
// 0700) unless path already exists. It reports whether this call created the file; when
// another process won the race, the caller reads theirs.
func CreateExclusive(path string, content []byte) (created bool, err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, fmt.Errorf("secretfile: create directory of %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+"-*") // CreateTemp makes it 0600
	if err != nil {
		return false, fmt.Errorf("secretfile: create %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(content); err != nil {
		tmp.Close()
		return false, fmt.Errorf("secretfile: write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return false, fmt.Errorf("secretfile: write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return false, fmt.Errorf("secretfile: write %s: %w", path, err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return false, nil
		}
		return false, fmt.Errorf("secretfile: install %s: %w", path, err)
	}
	return true, nil
}
