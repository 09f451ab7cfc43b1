package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Key is an API key the load may use: what `tradesvc keys create` prints, one per line of a
// keys file.
type Key struct {
	APIKey    string  `json:"apiKey"`
	APISecret string  `json:"apiSecret"`
	Logins    []int64 `json:"logins"`
	ReadOnly  bool    `json:"readOnly,omitempty"`
}

// ReadKeys reads JSON lines of keys; blank lines are skipped. A read-only key or one without
// logins cannot trade and is refused, naming its line.
func ReadKeys(r io.Reader) ([]Key, error) {
	var out []Key
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var k Key
		if err := json.Unmarshal(b, &k); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		switch {
		case k.APIKey == "" || k.APISecret == "":
			return nil, fmt.Errorf("line %d: apiKey and apiSecret are required", line)
		case len(k.Logins) == 0:
			return nil, fmt.Errorf("line %d: key %s has no logins", line, short(k.APIKey))
		case k.ReadOnly:
			return nil, fmt.Errorf("line %d: key %s is read-only", line, short(k.APIKey))
		}
		out = append(out, k)
	}
	return out, sc.Err()
}

// ReadKeysFile reads a keys file; a file that does not exist holds no keys (the first run
// of a series creates it with --keys-out).
func ReadKeysFile(path string) ([]Key, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	keys, err := ReadKeys(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return keys, nil
}

// WriteKeysFile replaces path with keys as JSON lines, readable by the owner only (the
// secrets are in it), atomically.
func WriteKeysFile(path string, keys []Key) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, k := range keys {
		if err := enc.Encode(k); err != nil {
			return err
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".keys-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// CreatedLogins is the scope of the j-th key the bench creates: perKey consecutive logins of
// logins, starting where the previous key's ended, so that created keys cover every login
// evenly and each login's deals go to as few user streams as the key count allows.
func CreatedLogins(j, perKey int, logins []int64) []int64 {
	perKey = min(perKey, len(logins))
	out := make([]int64, 0, perKey)
	for i := range perKey {
		out = append(out, logins[(j*perKey+i)%len(logins)])
	}
	return out
}

// short is the first characters of a key, enough to name it in a report.
func short(apiKey string) string {
	if len(apiKey) > 8 {
		return apiKey[:8]
	}
	return apiKey
}
