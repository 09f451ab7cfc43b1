// Package command is the write side: command handlers that validate client operations,
// record idempotency and append command events to the log, and the operator switches that
// gate them.
package command

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// ExecutorTimeout is how long without an executor heartbeat before TRADE endpoints answer
// -5015 (the spec's "about 30 seconds").
const ExecutorTimeout = 30 * time.Second

// LinkTimeout is how old an executor's heartbeat may be for its trade-server link to count.
// Executors record their link every second; a killed executor's last "up" would otherwise
// mask a live executor's "down" for the whole ExecutorTimeout (seen in the split run: a
// trade-server disconnect soon after an executor restart was answered ACCEPTED, not -5015).
const LinkTimeout = 5 * time.Second

// Switches reads and writes the operator switches and the execution path's state in
// cmd.switches and cmd.executor_heartbeats: whether an executor runs, and whether it reaches
// the trade server (each heartbeat, written every second, carries the executor's link to it;
// only those newer than LinkTimeout count for the link). Reads are cached for a second: they
// run before every TRADE request, and a switch flipped by an operator takes effect within
// that second on every gateway. One query runs at a time, outside the lock, so a slow database never blocks the
// requests that can still be answered from the last reading.
type Switches struct {
	pool *pgxpool.Pool
	ttl  time.Duration
	now  func() time.Time
	log  *slog.Logger

	mu       sync.Mutex
	loadedAt time.Time
	trading  bool
	alive    bool
	linked   bool
	err      error         // the last refresh's error, nil once a refresh succeeds
	failedAt time.Time     // when it failed: the next attempt waits a TTL, not the next request
	loading  chan struct{} // closed when the query in flight ends; nil when none runs
	gen      uint64        // bumped by SetTrading: a query that began before it is stale
}

// NewSwitches builds the store. A failed read is logged through slog.Default() when it
// starts failing and when it recovers (not on every request), and kept for Err.
func NewSwitches(pool *pgxpool.Pool, now func() time.Time) (*Switches, error) {
	if pool == nil || now == nil {
		return nil, errors.New("command: switches need a pool and a clock")
	}
	return &Switches{pool: pool, ttl: time.Second, now: now, log: slog.Default()}, nil
}

// refresh re-reads the switches when the cached reading is older than the TTL. While
// another caller's query runs, a caller with a reading uses it; one without waits for it.
func (s *Switches) refresh(ctx context.Context) {
	s.mu.Lock()
	for s.loading != nil && s.loadedAt.IsZero() {
		ch := s.loading
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return // never read: the callers fail closed
		}
		s.mu.Lock()
	}
	if s.loading != nil || !s.loadedAt.IsZero() && (s.now().Sub(s.loadedAt) < s.ttl || s.now().Sub(s.failedAt) < s.ttl) {
		s.mu.Unlock()
		return
	}
	ch := make(chan struct{})
	s.loading = ch
	gen := s.gen
	s.mu.Unlock()

	trading, alive, linked, err := s.read(ctx)

	s.mu.Lock()
	defer s.mu.Unlock()
	s.loading = nil
	close(ch)
	if s.gen != gen {
		return // this process switched trading meanwhile: the next caller reads again
	}
	if err != nil {
		// Unknown state: keep the last answer (a process that never read it fails closed:
		// trading and alive stay false).
		if s.err == nil {
			s.log.Error("cannot read the trading switch and executor liveness; answering from the last reading",
				"err", err, "lastReading", s.loadedAt)
		}
		s.err, s.failedAt = err, s.now()
		return
	}
	if s.err != nil {
		s.log.Info("trading switch and executor liveness readable again")
	}
	s.trading, s.alive, s.linked, s.loadedAt, s.err = trading, alive, linked, s.now(), nil
}

func (s *Switches) read(ctx context.Context) (trading, alive, linked bool, err error) {
	var value string
	// Liveness is judged on the database clock, the one heartbeats are stamped with, so a
	// gateway whose own clock drifts still agrees with every other gateway. The link is up
	// when an executor that recorded its link within LinkTimeout reaches the trade server.
	err = s.pool.QueryRow(ctx, `SELECT (SELECT value FROM cmd.switches WHERE name = 'trading'),
		coalesce((SELECT max(seen_at) > now() - make_interval(secs => $1) FROM cmd.executor_heartbeats), false),
		coalesce((SELECT bool_or(link_up) FROM cmd.executor_heartbeats WHERE seen_at > now() - make_interval(secs => $2)), false)`,
		ExecutorTimeout.Seconds(), LinkTimeout.Seconds()).Scan(&value, &alive, &linked)
	if err != nil {
		return false, false, false, fmt.Errorf("read switches: %w", err)
	}
	return value != "off", alive, linked, nil
}

// Err is the error of the last attempt to read the switches, nil when it succeeded (for
// readiness checks).
func (s *Switches) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Last returns the last reading and when it was taken (zero: never), without reading the
// database: readiness reports it without moving the cache that requests use.
func (s *Switches) Last() (trading, alive bool, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.trading, s.alive, s.loadedAt
}

// fresh refreshes the switches when their cache is stale and answers from them.
func (s *Switches) fresh(ctx context.Context, answer func() bool) bool {
	s.refresh(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	return answer()
}

// TradingEnabled is false while trading is switched off.
func (s *Switches) TradingEnabled(ctx context.Context) bool {
	return s.fresh(ctx, func() bool { return s.trading })
}

// ExecutorAlive is false when no executor has sent a heartbeat within ExecutorTimeout.
func (s *Switches) ExecutorAlive(ctx context.Context) bool {
	return s.fresh(ctx, func() bool { return s.alive })
}

// TradeServerLinked is false when no executor whose heartbeat is newer than LinkTimeout
// reaches the trade server.
func (s *Switches) TradeServerLinked(ctx context.Context) bool {
	return s.fresh(ctx, func() bool { return s.linked })
}

// ExecutionPathUp is true while an executor runs and reaches the trade server: otherwise
// TRADE endpoints answer -5015 before queueing anything (gateway.Switches).
func (s *Switches) ExecutionPathUp(ctx context.Context) bool {
	return s.fresh(ctx, func() bool { return s.alive && s.linked })
}

// LastLinked is the trade-server link as last read (false: never read), without reading the
// database (readiness).
func (s *Switches) LastLinked() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.linked
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
	s.gen++
	s.mu.Unlock()
	return nil
}

// Heartbeat records that executor instance is running and whether it reaches the trade
// server (linked). The database clock is the reference, so gateways on other machines agree
// on liveness.
func (s *Switches) Heartbeat(ctx context.Context, instance string, linked bool) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO cmd.executor_heartbeats (instance_id, seen_at, link_up) VALUES ($1, now(), $2)
		ON CONFLICT (instance_id) DO UPDATE SET seen_at = now(), link_up = EXCLUDED.link_up`, instance, linked)
	if err != nil {
		return fmt.Errorf("executor heartbeat: %w", err)
	}
	return nil
}
