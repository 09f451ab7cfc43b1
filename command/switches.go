// Package command is the write side: command handlers that validate client operations,
// record idempotency and append command events to the log, and the operator switches that
// gate them.
package command

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// ExecutorTimeout is how long without an executor heartbeat before TRADE endpoints answer
// -5015 (the spec's "about 30 seconds").
const ExecutorTimeout = 30 * time.Second

// Switches reads and writes the operator switches and executor liveness in cmd.switches and
// cmd.executor_heartbeats. Reads are cached for a second: they run before every TRADE
// request, and a switch flipped by an operator takes effect within that second on every
// gateway.
type Switches struct {
	pool *pgxpool.Pool
	ttl  time.Duration
	now  func() time.Time

	mu       sync.Mutex
	loadedAt time.Time
	trading  bool
	alive    bool
}

// NewSwitches builds the store.
func NewSwitches(pool *pgxpool.Pool, now func() time.Time) (*Switches, error) {
	if pool == nil || now == nil {
		return nil, errors.New("command: switches need a pool and a clock")
	}
	return &Switches{pool: pool, ttl: time.Second, now: now}, nil
}

func (s *Switches) refresh(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.loadedAt.IsZero() && s.now().Sub(s.loadedAt) < s.ttl {
		return
	}
	var trading string
	var alive bool
	// Liveness is judged on the database clock, the one heartbeats are stamped with, so a
	// gateway whose own clock drifts still agrees with every other gateway.
	err := s.pool.QueryRow(ctx, `SELECT (SELECT value FROM cmd.switches WHERE name = 'trading'),
		coalesce((SELECT max(seen_at) > now() - make_interval(secs => $1) FROM cmd.executor_heartbeats), false)`,
		ExecutorTimeout.Seconds()).Scan(&trading, &alive)
	if err != nil {
		// Unknown state: keep the last answer; fail closed for a process that never read it.
		if s.loadedAt.IsZero() {
			s.trading, s.alive = false, false
		}
		return
	}
	s.trading = trading != "off"
	s.alive = alive
	s.loadedAt = s.now()
}

// TradingEnabled is false while trading is switched off.
func (s *Switches) TradingEnabled(ctx context.Context) bool {
	s.refresh(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.trading
}

// ExecutorAlive is false when no executor has sent a heartbeat within ExecutorTimeout.
func (s *Switches) ExecutorAlive(ctx context.Context) bool {
	s.refresh(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.alive
}

// SetTrading switches trading on or off for every gateway.
func (s *Switches) SetTrading(ctx context.Context, on bool) error {
	v := "off"
	if on {
		v = "on"
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO cmd.switches (name, value, updated_at) VALUES ('trading', $1, now())
		ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value, updated_at = now()`, v)
	if err != nil {
		return fmt.Errorf("set trading %s: %w", v, err)
	}
	s.mu.Lock()
	s.loadedAt = time.Time{}
	s.mu.Unlock()
	return nil
}

// Heartbeat records that executor instance is running. The database clock is the
// reference, so gateways on other machines agree on liveness.
func (s *Switches) Heartbeat(ctx context.Context, instance string) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO cmd.executor_heartbeats (instance_id, seen_at) VALUES ($1, now())
		ON CONFLICT (instance_id) DO UPDATE SET seen_at = now()`, instance)
	if err != nil {
		return fmt.Errorf("executor heartbeat: %w", err)
	}
	return nil
}
