package query

import (
	"context"
	"time"
)

// Listen keys (cmd.listen_keys): the user data stream's credential, one active per API key,
// shared by every gateway instance. The user streams read and keep them through
// ListenKeyStore, which infra/listenkeys implements on Postgres.

// ListenKey is one listen key: at most one per API key is active (not deleted, not expired).
type ListenKey struct {
	Key       string
	APIKeyID  int64
	APIKey    string
	CreatedAt time.Time
	ExpiresAt time.Time
	Deleted   bool
}

// Active reports whether the listen key is usable at now.
func (k ListenKey) Active(now time.Time) bool { return !k.Deleted && now.Before(k.ExpiresAt) }

// ListenKeyStore keeps listen keys durably (infra/listenkeys: Postgres), so
// every gateway instance sees the same keys.
type ListenKeyStore interface {
	// Create returns the API key's active listen key at now, or stores candidate as the new
	// active one (retiring an expired one).
	Create(ctx context.Context, candidate ListenKey, now time.Time) (ListenKey, error)
	// Extend moves the expiry of the API key's active listen key to expiresAt; listenKey ""
	// means whichever is active. ok is false when there is no such active key.
	Extend(ctx context.Context, apiKeyID int64, listenKey string, now, expiresAt time.Time) (ListenKey, bool, error)
	// Delete deactivates the API key's active listen key (listenKey "" as for Extend).
	Delete(ctx context.Context, apiKeyID int64, listenKey string, now time.Time) (ListenKey, bool, error)
	// Get reads a listen key; ok is false when it never existed.
	Get(ctx context.Context, listenKey string) (ListenKey, bool, error)
}
