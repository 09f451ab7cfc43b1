// Package secretfile creates small secret files (keys, tokens) safely when several processes
// may start at once: the content is written to a private temporary file and linked into
// place, so no reader ever sees a half-written secret and a second creator never replaces
// the first one's.
package secretfile

import (
	"crypto/rand"
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

// LoadOrCreate returns what read makes of the secret file at path, creating the file first
// when read finds none (an error wrapping fs.ErrNotExist): size random bytes, stored as encode
// renders them (nil: raw). When several processes create it at once, the first one's file
// stands and every caller reads that one, so all of them use the same secret.
func LoadOrCreate[T any](path string, size int, encode func([]byte) []byte, read func(path string) (T, error)) (T, error) {
	v, err := read(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return v, err
	}
	fresh := make([]byte, size)
	if _, err := rand.Read(fresh); err != nil {
		return v, fmt.Errorf("secretfile: generate %s: %w", path, err)
	}
	if encode != nil {
		fresh = encode(fresh)
	}
	if _, err := CreateExclusive(path, fresh); err != nil {
		return v, err
	}
	return read(path)
}
