package remote

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// tokenBytes is the entropy of a generated token (hex-encoded on disk).
const tokenBytes = 32

// LoadOrCreateToken returns the bearer token stored at path, creating the file (32 random
// bytes, hex, mode 0600, parent directories 0700) when it does not exist yet. The sim role
// calls it to publish the token; the admin CLI and a remote executor call it to read it.
// Two processes racing to create the file end up with the same token: creation is
// exclusive and the loser reads the winner's file.
func LoadOrCreateToken(path string) (string, error) {
	if path == "" {
		return "", errors.New("remote: empty token path")
	}
	if tok, err := ReadToken(path); err == nil {
		return tok, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("remote: token dir: %w", err)
	}
	raw := make([]byte, tokenBytes)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("remote: token entropy: %w", err)
	}
	tok := hex.EncodeToString(raw)
	// Write to a temporary file and link it into place so that a concurrent reader never
	// sees a half-written token, and a concurrent creator never overwrites ours.
	tmp, err := os.CreateTemp(filepath.Dir(path), ".token-*")
	if err != nil {
		return "", fmt.Errorf("remote: token temp file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return "", fmt.Errorf("remote: token chmod: %w", err)
	}
	if _, err := tmp.WriteString(tok + "\n"); err != nil {
		tmp.Close()
		return "", fmt.Errorf("remote: token write: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("remote: token write: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return ReadToken(path)
		}
		return "", fmt.Errorf("remote: token publish: %w", err)
	}
	return tok, nil
}

// ReadToken reads an existing token file; it never creates one. The error wraps
// fs.ErrNotExist when the file is missing (the sim role has not started yet).
func ReadToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("remote: read token: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("remote: token file %s is empty", path)
	}
	return tok, nil
}
