package streams

import (
	"context"
	"encoding/json"
	"time"
)

// Change is one row of the projection change feed (projections.ChangeFeed): a client-visible
// change of a login, committed with the read models it describes.
type Change struct {
	Seq   int64
	Login int64
	// Kind is the user-stream event kind (DEAL, ORDER_UPDATE, POSITION_UPDATE,
	// ACCOUNT_UPDATE) or a kind the user stream does not carry (OPERATION).
	Kind        string
	OperationID string
	// APIKeyID is the stored id of the key whose operation caused the change (0: none).
	APIKeyID      int64
	ClientOrderID string
	// Event is the frame as the projection wrote it, without C.
	Event     json.RawMessage
	CreatedAt time.Time
}

// ChangeFeed delivers the change feed to user streams.
type ChangeFeed interface {
	// Subscribe delivers the changes of the logins match accepts (match is called from the
	// feed's goroutine and must be cheap), buffering up to buf; a subscriber that falls
	// further behind is ended with an error.
	Subscribe(match func(login int64) bool, buf int) Subscription
}

// Subscription is one user stream's view of the change feed.
type Subscription interface {
	C() <-chan Change
	// Done is closed when the subscription ends; Err then tells why (the lag error when the
	// subscriber fell behind, nil when the feed stopped).
	Done() <-chan struct{}
	Err() error
	Close()
}

// KeyScope is what a user stream needs to know about its API key.
type KeyScope struct {
	ID      int64
	Logins  []int64
	Revoked bool
}

// Keys finds API keys by their public key (the gateway's key cache).
type Keys interface {
	// Key returns the key's scope; ok is false for an unknown key.
	Key(ctx context.Context, apiKey string) (KeyScope, bool, error)
}

// Switches tells whether trading is switched on (the user stream answers -1017 while off).
type Switches interface {
	TradingEnabled(ctx context.Context) bool
}

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

// ListenKeyStore keeps listen keys durably (infra/listenkeys: Postgres, cmd.listen_keys), so
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
