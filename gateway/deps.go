package gateway

import (
	"context"
	"errors"
	"net/netip"
	"time"

	"tradesvc/gateway/ratelimit"
	"tradesvc/infra/check"
	"tradesvc/query"
)

// Key is what the gateway needs to know about an API key. The key store (infra/keys)
// adapts its records to it.
type Key struct {
	// ID identifies the key in logs and rate-limit buckets; never the secret.
	ID string
	// APIKey is the public key sent in X-SVC-APIKEY.
	APIKey string
	// Secret is the HMAC-SHA256 key that signs USER_DATA and TRADE requests.
	Secret []byte
	// Logins is the key's scope: the accounts it may read and trade.
	Logins []int64
	// ReadOnly keys get -2015 on TRADE endpoints.
	ReadOnly bool
	// AllowCIDRs restricts source addresses; empty allows any.
	AllowCIDRs []netip.Prefix
	// Revoked keys (and keys whose owner is inactive) are refused with -2015.
	Revoked bool
	// Per-key limits; 0 takes the gateway's default.
	WeightPerMinute int
	Orders10s       int
	Orders1m        int
}

// ErrUnknownKey is what a KeyStore returns for a key it does not know.
var ErrUnknownKey = errors.New("gateway: unknown api key")

// KeyStore finds API keys. The gateway caches answers for Config.KeyCacheTTL (at most 2 s)
// so that revocation and scope changes take effect within seconds.
type KeyStore interface {
	// Lookup returns the key, ErrUnknownKey (wrapped or not) when there is none, or another
	// error when the store cannot be read (answered -1000, never cached).
	Lookup(ctx context.Context, apiKey string) (Key, error)
}

// Switches are the service switches checked before any TRADE endpoint.
type Switches interface {
	// TradingEnabled is false while trading is switched off (-1017).
	TradingEnabled(ctx context.Context) bool
	// ExecutionPathUp is false when no executor has been seen for about 30 s, or none of
	// those seen reaches the trade server (-5015).
	ExecutionPathUp(ctx context.Context) bool
}

// Deps are what the request pipeline itself needs (the application's handlers come
// separately). All are required except Clock (time.Now).
type Deps struct {
	Keys     KeyStore
	Switches Switches
	// Accounts is read by the pipeline of trading endpoints (RequireAccount).
	Accounts query.AccountReader
	// Clock is the server clock (serverTime, recvWindow checks, rate windows).
	Clock func() time.Time
	// Streams are the sources of the WebSocket streams (routes_streams.go); zero: none.
	Streams StreamDeps
	// RateLimits is where the keys' rate-limit counters, throttles and bans live; nil: this
	// gateway's own memory. Gateways that must enforce one key's limits together share one.
	RateLimits ratelimit.Store
}

// Validate reports missing dependencies.
func (d Deps) Validate() error {
	var errs check.Problems
	errs.If(d.Keys == nil, "gateway: missing dependency Keys")
	errs.If(d.Switches == nil, "gateway: missing dependency Switches")
	errs.If(d.Accounts == nil, "gateway: missing dependency Accounts")
	return errs.Err()
}
