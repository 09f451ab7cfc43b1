package keys

import (
	"context"
	"fmt"
)

// Revoke disables a key for good (rows are kept for the audit trail). Revoking a revoked key
// again is not an error; an unknown key is ErrNotFound.
func (s *Store) Revoke(ctx context.Context, apiKey string) error {
	tag, err := s.pool.Exec(ctx, `UPDATE cmd.api_keys
		SET revoked_at = coalesce(revoked_at, now()), updated_at = now()
		WHERE api_key = $1`, apiKey)
	if err != nil {
		return fmt.Errorf("keys: revoke: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// Scope replaces the logins an active key may act on. Unknown or revoked keys are ErrNotFound.
func (s *Store) Scope(ctx context.Context, apiKey string, logins []int64) error {
	normalized, err := normalizeLogins(logins)
	if err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, `UPDATE cmd.api_keys SET logins = $2, updated_at = now()
		WHERE api_key = $1 AND revoked_at IS NULL`, apiKey, normalized)
	if err != nil {
		return fmt.Errorf("keys: scope: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}
