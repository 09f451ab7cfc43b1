package ratelimit

import (
	"context"
	"sync"
)

// Store keeps every key's State and applies charges to it, atomically per key. Memory is one
// gateway's own store. The spec's limits are per key across all source addresses, so
// gateways that share keys need one store between them (gateway/ratelimit/sharedlimits keeps it in
// Postgres); such a store loads the key's State, calls State.Apply with its Policy and saves
// the result atomically per key, exactly as Memory does. A shared store can fail (its
// database unreachable): the gateway then answers -1000 (HTTP 503) and charges nothing.
type Store interface {
	// Charge applies c to key id's state and returns the verdict and the usage after it.
	Charge(ctx context.Context, id string, c Charge) (Decision, Usage, error)
	// Usage returns key id's usage at now (Unix ms) without charging; zero for an unseen key.
	Usage(ctx context.Context, id string, now int64) (Usage, error)
}

// Memory is the Store of one process: a map of keys, each with its own mutex.
type Memory struct {
	policy Policy
	keys   sync.Map // key id → *entry
}

type entry struct {
	mu sync.Mutex
	st State
}

// NewMemory returns an empty in-process store applying policy.
func NewMemory(policy Policy) *Memory { return &Memory{policy: policy} }

func (m *Memory) entry(id string) *entry {
	if e, ok := m.keys.Load(id); ok {
		return e.(*entry)
	}
	e, _ := m.keys.LoadOrStore(id, &entry{})
	return e.(*entry)
}

// Charge implements Store; it never fails.
func (m *Memory) Charge(_ context.Context, id string, c Charge) (Decision, Usage, error) {
	d, u := m.charge(id, c)
	return d, u, nil
}

// charge is Charge without the interface's context and error (the Limiter's hot path).
func (m *Memory) charge(id string, c Charge) (Decision, Usage) {
	e := m.entry(id)
	e.mu.Lock()
	d, u := e.st.Apply(&m.policy, c) // Apply cannot panic: no deferred unlock on the hot path
	e.mu.Unlock()
	return d, u
}

// Usage implements Store; it never fails.
func (m *Memory) Usage(_ context.Context, id string, now int64) (Usage, error) {
	v, ok := m.keys.Load(id)
	if !ok {
		return Usage{}, nil
	}
	e := v.(*entry)
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.st.Usage(now), nil
}
