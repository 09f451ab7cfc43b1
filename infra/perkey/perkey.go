// Package perkey holds state kept per key, created on first use and then read far more often
// than created (the market state of each symbol, read on every tick and every market read).
package perkey

import "sync"

// Map maps keys to their state. A read takes the shared lock only; creating takes the lock
// alone and creates a key's state once, however many callers race for it. The zero value is
// empty and ready; a Map must not be copied after first use.
type Map[K comparable, V any] struct {
	mu sync.RWMutex
	m  map[K]*V
}

// Get returns the state of k, nil when it has none yet.
func (m *Map[K, V]) Get(k K) *V {
	m.mu.RLock()
	v := m.m[k]
	m.mu.RUnlock()
	return v
}

// Ensure returns the state of k, made by create when k has none yet.
func (m *Map[K, V]) Ensure(k K, create func() *V) *V {
	if v := m.Get(k); v != nil {
		return v
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if v := m.m[k]; v != nil {
		return v
	}
	if m.m == nil {
		m.m = map[K]*V{}
	}
	v := create()
	m.m[k] = v
	return v
}

// Len is the number of keys with state.
func (m *Map[K, V]) Len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.m)
}

// Range calls f for every key and its state, in no order, under the shared lock: f must not
// call Ensure.
func (m *Map[K, V]) Range(f func(k K, v *V)) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for k, v := range m.m {
		f(k, v)
	}
}
