package remote

import (
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"

	"tradesvc/infra/secretfile"
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
	return secretfile.LoadOrCreate(path, tokenBytes, func(raw []byte) []byte {
		return []byte(hex.EncodeToString(raw) + "\n")
	}, ReadToken)
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
