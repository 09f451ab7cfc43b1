package keys

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

const recordColumns = `id, api_key, logins, read_only, allow_cidrs, weight_per_minute, orders_10s, orders_1m,
	created_at, updated_at, revoked_at`

func scanRecord(row pgx.Row, extra ...any) (Record, error) {
	var r Record
	var cidrs []string
	var created, updated time.Time
	var revoked *time.Time
	dest := append([]any{&r.ID, &r.APIKey, &r.Logins, &r.ReadOnly, &cidrs,
		&r.Limits.WeightPerMinute, &r.Limits.Orders10s, &r.Limits.Orders1m, &created, &updated, &revoked}, extra...)
	if err := row.Scan(dest...); err != nil {
		return Record{}, err
	}
	var err error
	if r.AllowCIDRs, err = parseCIDRs(cidrs); err != nil {
		return Record{}, err
	}
	r.CreatedAt, r.UpdatedAt, r.RevokedAt = created.UnixMilli(), updated.UnixMilli(), unixMs(revoked)
	return r, nil
}

// Lookup returns the active key apiKey with its decrypted secret, for authenticating a
// request. A revoked or unknown key is ErrNotFound.
func (s *Store) Lookup(ctx context.Context, apiKey string) (Record, error) {
	if !ValidAPIKey(apiKey) {
		return Record{}, ErrNotFound
	}
	var ciphertext, nonce []byte
	r, err := scanRecord(s.pool.QueryRow(ctx, `SELECT `+recordColumns+`, secret_ciphertext, secret_nonce
		FROM cmd.api_keys WHERE api_key = $1 AND revoked_at IS NULL`, apiKey), &ciphertext, &nonce)
	if errors.Is(err, pgx.ErrNoRows) {
		return Record{}, ErrNotFound
	}
	if err != nil {
		return Record{}, fmt.Errorf("keys: lookup: %w", err)
	}
	if r.Secret, err = s.open(apiKey, ciphertext, nonce); err != nil {
		return Record{}, err
	}
	return r, nil
}

// List returns every key, revoked ones included, oldest first, without secrets.
func (s *Store) List(ctx context.Context) ([]Record, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+recordColumns+` FROM cmd.api_keys ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("keys: list: %w", err)
	}
	defer rows.Close()
	out := []Record{}
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return nil, fmt.Errorf("keys: list: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("keys: list: %w", err)
	}
	return out, nil
}
