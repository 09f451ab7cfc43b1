package streams

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"tradesvc/query"
)

// fakeFeed is a change feed fed by the test: publish delivers to every matching subscriber
// without blocking, and ends a full one with errLagged (as projections.ChangeFeed does).
type fakeFeed struct {
	mu   sync.Mutex
	subs []*fakeSub
}

var errLagged = query.ErrLagged

type fakeSub struct {
	match func(int64) bool
	c     chan query.Change
	done  chan struct{}
	once  sync.Once
	err   error
}

func (f *fakeFeed) Subscribe(scope query.Scope, buf int) query.Subscription {
	s := &fakeSub{match: scope.Match, c: make(chan query.Change, buf), done: make(chan struct{})}
	f.mu.Lock()
	f.subs = append(f.subs, s)
	f.mu.Unlock()
	return s
}

func (f *fakeFeed) publish(ch query.Change) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.subs {
		if !s.match(ch.Login) {
			continue
		}
		select {
		case <-s.done:
		case s.c <- ch:
		default:
			s.end(errLagged)
		}
	}
}

// subscribers counts live subscriptions.
func (f *fakeFeed) subscribers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, s := range f.subs {
		select {
		case <-s.done:
		default:
			n++
		}
	}
	return n
}

func (s *fakeSub) end(err error) {
	s.once.Do(func() {
		s.err = err
		close(s.done)
	})
}

func (s *fakeSub) C() <-chan query.Change { return s.c }
func (s *fakeSub) Done() <-chan struct{}  { return s.done }
func (s *fakeSub) Err() error             { <-s.done; return s.err }
func (s *fakeSub) Close()                 { s.end(nil) }

// fakeKeys is the gateway's key cache.
type fakeKeys struct {
	mu   sync.Mutex
	keys map[string]KeyScope
}

func (f *fakeKeys) Key(_ context.Context, apiKey string) (KeyScope, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k, ok := f.keys[apiKey]
	return k, ok, nil
}

func (f *fakeKeys) set(apiKey string, k KeyScope) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.keys[apiKey] = k
}

type fakeSwitches struct{ off atomic.Bool }

func (f *fakeSwitches) TradingEnabled(context.Context) bool { return !f.off.Load() }

// memListenKeys keeps listen keys in memory with the store's rules (infra/listenkeys keeps
// them in Postgres; its own test checks the same rules there).
type memListenKeys struct {
	mu   sync.Mutex
	keys map[string]*query.ListenKey
}

func (m *memListenKeys) active(apiKeyID int64, key string, now time.Time) *query.ListenKey {
	for _, k := range m.keys {
		if k.APIKeyID == apiKeyID && k.Active(now) && (key == "" || k.Key == key) {
			return k
		}
	}
	return nil
}

func (m *memListenKeys) Create(_ context.Context, c query.ListenKey, now time.Time) (query.ListenKey, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if k := m.active(c.APIKeyID, "", now); k != nil {
		return *k, nil
	}
	for _, k := range m.keys {
		if k.APIKeyID == c.APIKeyID {
			k.Deleted = true
		}
	}
	m.keys[c.Key] = &c
	return c, nil
}

func (m *memListenKeys) Extend(_ context.Context, apiKeyID int64, key string, now, exp time.Time) (query.ListenKey, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := m.active(apiKeyID, key, now)
	if k == nil {
		return query.ListenKey{}, false, nil
	}
	k.ExpiresAt = exp
	return *k, true, nil
}

func (m *memListenKeys) Delete(_ context.Context, apiKeyID int64, key string, now time.Time) (query.ListenKey, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := m.active(apiKeyID, key, now)
	if k == nil {
		return query.ListenKey{}, false, nil
	}
	k.Deleted = true
	return *k, true, nil
}

func (m *memListenKeys) Get(_ context.Context, key string) (query.ListenKey, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k, ok := m.keys[key]
	if !ok {
		return query.ListenKey{}, false, nil
	}
	return *k, true, nil
}

// userEnv is a streams server with a user data stream over fakes.
type userEnv struct {
	*testServer
	feed     *fakeFeed
	keys     *fakeKeys
	switches *fakeSwitches
	store    *memListenKeys
}

func startUsers(t *testing.T, cfg Config) *userEnv {
	t.Helper()
	e := &userEnv{feed: &fakeFeed{}, keys: &fakeKeys{keys: map[string]KeyScope{}}, switches: &fakeSwitches{},
		store: &memListenKeys{keys: map[string]*query.ListenKey{}}}
	e.testServer = startServer(t, cfg, Deps{Changes: e.feed, ListenKeys: e.store, Keys: e.keys, Switches: e.switches})
	return e
}
