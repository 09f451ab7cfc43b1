package streams

import (
	"context"
)

// The user data stream reads the projection change feed through query.ChangeFeed (the port
// the query side declares and projections.ChangeFeed implements).

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
