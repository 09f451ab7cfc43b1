// Package keys is the API key store on cmd.api_keys: issuing keys with their secrets,
// listing, revoking and re-scoping them, and looking a key up for request authentication.
//
// The secret must be available in clear to verify HMAC-SHA256 signatures, so it cannot be
// hashed like a password; it is encrypted at rest with AES-256-GCM under the service master
// key (see ResolveMasterKey), with the API key as additional authenticated data. A database
// dump alone reveals no secret.
package keys

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"tradesvc/infra/check"

	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrNotFound is returned for an API key that does not exist or has been revoked.
var ErrNotFound = errors.New("keys: API key not found")

// Config holds the store's dependencies.
type Config struct {
	// Pool reaches the command-side database (migrated: cmd.api_keys exists).
	Pool *pgxpool.Pool
	// MasterKey is the 32-byte AES-256 key that encrypts secrets at rest.
	MasterKey []byte
}

// Validate reports every problem of the configuration at once.
func (c Config) Validate() error {
	var errs check.Problems
	errs.If(c.Pool == nil, "keys: no database pool")
	if len(c.MasterKey) != MasterKeySize {
		errs.Add(fmt.Errorf("keys: master key has %d bytes, want %d", len(c.MasterKey), MasterKeySize))
	}
	return errs.Err()
}

// Store issues and looks up API keys. It is safe for concurrent use.
type Store struct {
	pool *pgxpool.Pool
	aead cipher.AEAD
}

// NewStore checks the configuration and prepares the cipher.
func NewStore(cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(cfg.MasterKey)
	if err != nil {
		return nil, fmt.Errorf("keys: cipher: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("keys: cipher: %w", err)
	}
	return &Store{pool: cfg.Pool, aead: aead}, nil
}

func (s *Store) seal(apiKey string, secret []byte) (ciphertext, nonce []byte, err error) {
	nonce = make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, nil, fmt.Errorf("keys: nonce: %w", err)
	}
	return s.aead.Seal(nil, nonce, secret, []byte(apiKey)), nonce, nil
}

func (s *Store) open(apiKey string, ciphertext, nonce []byte) ([]byte, error) {
	secret, err := s.aead.Open(nil, nonce, ciphertext, []byte(apiKey))
	if err != nil {
		// Wrong master key, or a row tampered with: never fall back to anything.
		return nil, fmt.Errorf("keys: cannot decrypt the secret of this key (wrong master key?): %w", err)
	}
	return secret, nil
}
