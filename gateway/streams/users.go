package streams

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"tradesvc/events"
	"tradesvc/infra/keys"
	"tradesvc/query"
)

// Users serves the user data stream and the listen-key endpoints: one active listen key per
// API key, 60 minutes from its creation or last keepalive; one connection per listen key
// carries the events of every login in the key's scope.
type Users struct {
	cfg      *Config
	pace     *pacer
	feed     query.ChangeFeed
	symbols  SymbolLookup
	keys     Keys
	switches Switches
	store    query.ListenKeyStore
	log      *slog.Logger

	mu   sync.Mutex
	open map[string]map[*userConn]struct{} // listen key → its connections on this gateway

	frames frameCache // each change's frame, rendered once for all its subscribers
}

// frameCache holds the frames of the most recent facts, by fact (the change feed hands every
// subscriber the same fact): a change that reaches many streams is rendered once.
type frameCache struct {
	mu    sync.Mutex
	byKey map[events.Event][]byte
	ring  []events.Event
	next  int
}

// frameCacheSize bounds the facts remembered: the subscribers of one change take it within
// moments of each other.
const frameCacheSize = 4096

// render returns the frame of fact, rendering it only the first time.
func (c *frameCache) render(fact events.Event, digits func(string) int32) ([]byte, bool) {
	c.mu.Lock()
	if f, ok := c.byKey[fact]; ok {
		c.mu.Unlock()
		return f, true
	}
	c.mu.Unlock()
	f, ok := userFrame(fact, digits)
	if !ok {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byKey == nil {
		c.byKey, c.ring = make(map[events.Event][]byte, frameCacheSize), make([]events.Event, frameCacheSize)
	}
	if _, ok := c.byKey[fact]; !ok {
		if old := c.ring[c.next]; old != nil {
			delete(c.byKey, old)
		}
		c.ring[c.next], c.byKey[fact] = fact, f
		c.next = (c.next + 1) % len(c.ring)
	}
	return f, true
}

// digits is a symbol's price precision for the frames, -1 when the symbol is unknown (the
// symbol read model is an in-memory snapshot: this costs no round trip).
func (u *Users) digits(symbol string) int32 {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	spec, ok, err := u.symbols.Symbol(ctx, symbol)
	if err != nil || !ok {
		return -1
	}
	return spec.Digits
}

// Rejections of the listen-key endpoints and the user-stream upgrade.
var (
	errNoListenKey = events.Reject(events.CodeInvalidListenKey, "This listen key does not exist or is not the active one.")
	errTradingOff  = events.Reject(events.CodeTradingOff, "Trading is switched off; the user data stream is unavailable. Retry with backoff.")
	errUnavailable = events.ErrUnavailable
)

// listenKeyLen is the length of a listen key: 64 letters and digits (no '@', which market
// stream names always contain, so /ws/<name> tells the two apart).
const listenKeyLen = 64

// newListenKey draws a listen key from crypto/rand (about 380 bits).
func newListenKey() (string, error) {
	k, err := keys.RandomString(listenKeyLen)
	if err != nil {
		return "", fmt.Errorf("streams: draw listen key: %w", err)
	}
	return k, nil
}

// validListenKey reports whether s has the shape of a listen key.
func validListenKey(s string) bool { return keys.IsRandomString(s, listenKeyLen) }

// CreateListenKey answers POST /v1/listenKey: the API key's active listen key while it lives,
// else a new one.
func (u *Users) CreateListenKey(ctx context.Context, apiKeyID int64, apiKey string) (string, error) {
	key, err := newListenKey()
	if err != nil {
		return "", err
	}
	now := u.cfg.Clock()
	lk, err := u.store.Create(ctx, query.ListenKey{Key: key, APIKeyID: apiKeyID, APIKey: apiKey, CreatedAt: now,
		ExpiresAt: now.Add(u.cfg.ListenKeyLifetime)}, now)
	if err != nil {
		return "", fmt.Errorf("create listen key: %w", err)
	}
	return lk.Key, nil
}

// ExtendListenKey answers PUT /v1/listenKey: the active listen key (the named one, which
// must be the active one, or whichever is active when listenKey is empty) lives
// ListenKeyLifetime from now. No active key: -1125.
func (u *Users) ExtendListenKey(ctx context.Context, apiKeyID int64, listenKey string) error {
	if listenKey != "" && !validListenKey(listenKey) {
		return errNoListenKey
	}
	now := u.cfg.Clock()
	_, ok, err := u.store.Extend(ctx, apiKeyID, listenKey, now, now.Add(u.cfg.ListenKeyLifetime))
	if err != nil {
		return fmt.Errorf("extend listen key: %w", err)
	}
	if !ok {
		return errNoListenKey
	}
	return nil
}

// DeleteListenKey answers DELETE /v1/listenKey: the listen key is deactivated at once and its
// sockets on this gateway close (other gateways close theirs within UserRecheck).
func (u *Users) DeleteListenKey(ctx context.Context, apiKeyID int64, listenKey string) error {
	if listenKey != "" && !validListenKey(listenKey) {
		return errNoListenKey
	}
	lk, ok, err := u.store.Delete(ctx, apiKeyID, listenKey, u.cfg.Clock())
	if err != nil {
		return fmt.Errorf("delete listen key: %w", err)
	}
	if !ok {
		return errNoListenKey
	}
	u.mu.Lock()
	for c := range u.open[lk.Key] {
		c.shut(closeNormal, "listen key deleted", nil)
	}
	u.mu.Unlock()
	return nil
}

// admit checks a user-stream upgrade: trading on (-1017), the listen key active (-1125) and
// its API key still valid (-1125: a revoked key's listen keys do not exist any more).
func (u *Users) admit(ctx context.Context, listenKey string) (query.ListenKey, KeyScope, error) {
	if !validListenKey(listenKey) {
		return query.ListenKey{}, KeyScope{}, errNoListenKey
	}
	if !u.switches.TradingEnabled(ctx) {
		return query.ListenKey{}, KeyScope{}, errTradingOff
	}
	lk, ok, err := u.store.Get(ctx, listenKey)
	if err != nil {
		u.log.Error("streams: read listen key", "err", err)
		return query.ListenKey{}, KeyScope{}, errUnavailable
	}
	if !ok || !lk.Active(u.cfg.Clock()) {
		return query.ListenKey{}, KeyScope{}, errNoListenKey
	}
	ks, ok, err := u.keys.Key(ctx, lk.APIKey)
	if err != nil {
		u.log.Error("streams: read api key", "err", err)
		return query.ListenKey{}, KeyScope{}, errUnavailable
	}
	if !ok || ks.Revoked || ks.ID != lk.APIKeyID {
		return query.ListenKey{}, KeyScope{}, errNoListenKey
	}
	return lk, ks, nil
}

func (u *Users) register(c *userConn) {
	u.mu.Lock()
	defer u.mu.Unlock()
	set := u.open[c.lk.Key]
	if set == nil {
		set = make(map[*userConn]struct{})
		u.open[c.lk.Key] = set
	}
	set[c] = struct{}{}
}

func (u *Users) unregister(c *userConn) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if set := u.open[c.lk.Key]; set != nil {
		delete(set, c)
		if len(set) == 0 {
			delete(u.open, c.lk.Key)
		}
	}
}
