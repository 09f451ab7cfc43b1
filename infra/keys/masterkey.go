package keys

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"

	"tradesvc/infra/secretfile"
)

// MasterKeySize is the length of the master key: AES-256.
const MasterKeySize = 32

// ResolveMasterKey returns the master key that encrypts API secrets at rest: the value
// supplied by the operator when there is one (proposed variable TRADESVC_MASTER_KEY, 64 hex
// digits or base64 of 32 bytes, e.g. from a secret manager), otherwise the key file at path
// (TRADESVC_MASTER_KEY_FILE, default RUN_DIR/master.key), created on first use.
//
// Losing the master key makes every stored secret unreadable (keys must then be issued
// again); back the file up with the database.
func ResolveMasterKey(value, path string) ([]byte, error) {
	if value != "" {
		return ParseMasterKey(value)
	}
	return LoadOrCreateMasterKey(path)
}

// ParseMasterKey decodes a master key given as 64 hex digits or as standard or URL-safe
// base64 (padded or not) of 32 bytes.
func ParseMasterKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if b, err := hex.DecodeString(s); err == nil && len(b) == MasterKeySize {
		return b, nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil && len(b) == MasterKeySize {
			return b, nil
		}
	}
	return nil, errors.New("keys: master key must be 32 bytes as 64 hex digits or base64")
}

// LoadOrCreateMasterKey reads the key file at path (32 raw bytes, or its hex/base64 text),
// or creates it with 32 random bytes and mode 0600 if it does not exist. Creation is atomic:
// when several processes start together, exactly one key wins and all of them use it. A key
// file readable by group or others is refused.
func LoadOrCreateMasterKey(path string) ([]byte, error) {
	return secretfile.LoadOrCreate(path, MasterKeySize, nil, readMasterKey)
}

func readMasterKey(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("keys: master key %s has mode %v: it must be readable by its owner only (chmod 600)", path, st.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("keys: read master key: %w", err)
	}
	if len(b) == MasterKeySize {
		return b, nil
	}
	key, err := ParseMasterKey(string(b))
	if err != nil {
		return nil, fmt.Errorf("keys: %s: %w", path, err)
	}
	return key, nil
}
