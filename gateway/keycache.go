package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"tradesvc/gateway/ratelimit"
)

// authKey is a Key prepared for the hot path.
type authKey struct {
	Key
	logins map[int64]struct{}
	limits ratelimit.Limits
}

// InScope reports whether login belongs to the key.
func (k *authKey) InScope(login int64) bool {
	_, ok := k.logins[login]
	return ok
}

// allows reports whether the source address may use the key.
func (k *authKey) allows(addr netip.Addr) bool {
	if len(k.AllowCIDRs) == 0 {
		return true
	}
	addr = addr.Unmap()
	for _, p := range k.AllowCIDRs {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

func newAuthKey(k Key) *authKey {
	if k.ID == "" {
		k.ID = k.APIKey // rate-limit buckets need a stable identity
	}
	a := &authKey{Key: k, logins: make(map[int64]struct{}, len(k.Logins))}
	for _, l := range k.Logins {
		a.logins[l] = struct{}{}
	}
	a.limits = ratelimit.Limits{WeightPerMinute: k.WeightPerMinute, Orders10s: k.Orders10s, Orders1m: k.Orders1m}
	return a
}

// cacheEntry is one cached lookup: a key, or nil for an unknown one.
type cacheEntry struct {
	key     *authKey
	expires int64 // unix nanos
}

// maxNegative bounds cached "unknown key" answers so that random keys cannot grow memory.
const maxNegative = 10_000

// keyCache reuses key lookups for ttl.
type keyCache struct {
	store    KeyStore
	ttl      time.Duration
	now      func() time.Time
	entries  sync.Map // api key → cacheEntry
	negative atomic.Int64
}

// errKeyStore marks a store failure (answered -1000, not cached).
var errKeyStore = errors.New("key store unavailable")

// get returns the key, nil for an unknown one, or an error wrapping errKeyStore.
func (c *keyCache) get(ctx context.Context, apiKey string) (*authKey, error) {
	now := c.now().UnixNano()
	if v, ok := c.entries.Load(apiKey); ok {
		e := v.(cacheEntry)
		if now < e.expires {
			return e.key, nil
		}
	}
	k, err := c.store.Lookup(ctx, apiKey)
	switch {
	case errors.Is(err, ErrUnknownKey):
		if c.negative.Load() < maxNegative {
			if old, loaded := c.entries.Swap(apiKey, cacheEntry{expires: now + int64(c.ttl)}); !loaded || old.(cacheEntry).key != nil {
				c.negative.Add(1)
			}
		}
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("%w: %w", errKeyStore, err)
	}
	a := newAuthKey(k)
	if old, loaded := c.entries.Swap(apiKey, cacheEntry{key: a, expires: now + int64(c.ttl)}); loaded && old.(cacheEntry).key == nil {
		c.negative.Add(-1)
	}
	return a, nil
}

// sweep drops expired entries; Serve runs it periodically.
func (c *keyCache) sweep() {
	now := c.now().UnixNano()
	c.entries.Range(func(k, v any) bool {
		e := v.(cacheEntry)
		if now >= e.expires && c.entries.CompareAndDelete(k, v) && e.key == nil {
			c.negative.Add(-1)
		}
		return true
	})
}
