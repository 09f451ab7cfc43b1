package keys

import (
	"context"
	"errors"
	"fmt"
)

// CreateParams describes a key to issue.
type CreateParams struct {
	// Logins the key may act on (the broker's accounts); sorted and deduplicated.
	Logins []int64
	// ReadOnly keys can read but never trade.
	ReadOnly bool
	// AllowCIDRs restricts source addresses (networks or single IPs); empty allows any.
	AllowCIDRs []string
	// Limits overrides the default rate limits; zero fields keep the defaults.
	Limits Limits
}

// Created is the answer of Create: the only time the secret is ever shown.
type Created struct {
	ID        int64   `json:"-"`
	APIKey    string  `json:"apiKey"`
	APISecret string  `json:"apiSecret"`
	Logins    []int64 `json:"logins"`
	ReadOnly  bool    `json:"readOnly"`
}

// Create issues a new key with a fresh 64-character secret and stores the secret encrypted.
func (s *Store) Create(ctx context.Context, p CreateParams) (Created, error) {
	logins, err := normalizeLogins(p.Logins)
	if err != nil {
		return Created{}, err
	}
	cidrs, err := parseCIDRs(p.AllowCIDRs)
	if err != nil {
		return Created{}, err
	}
	if p.Limits.WeightPerMinute < 0 || p.Limits.Orders10s < 0 || p.Limits.Orders1m < 0 {
		return Created{}, errors.New("keys: negative rate limit")
	}
	apiKey, err := RandomString(CredentialLength)
	if err != nil {
		return Created{}, err
	}
	secret, err := RandomString(CredentialLength)
	if err != nil {
		return Created{}, err
	}
	ciphertext, nonce, err := s.seal(apiKey, []byte(secret))
	if err != nil {
		return Created{}, err
	}
	var id int64
	err = s.pool.QueryRow(ctx, `INSERT INTO cmd.api_keys
		(api_key, secret_ciphertext, secret_nonce, logins, read_only, allow_cidrs, weight_per_minute, orders_10s, orders_1m)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id`,
		apiKey, ciphertext, nonce, logins, p.ReadOnly, prefixStrings(cidrs),
		p.Limits.WeightPerMinute, p.Limits.Orders10s, p.Limits.Orders1m).Scan(&id)
	if err != nil {
		return Created{}, fmt.Errorf("keys: insert: %w", err)
	}
	return Created{ID: id, APIKey: apiKey, APISecret: secret, Logins: logins, ReadOnly: p.ReadOnly}, nil
}
