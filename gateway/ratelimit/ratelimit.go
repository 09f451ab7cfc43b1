// Package ratelimit keeps the per-key request-weight and order counters and the 429 → 418
// ban escalation. Windows are fixed and aligned to the Unix epoch (a minute window opens at
// :00), so the usage headers read like a wall clock.
//
// The rule (State.Apply) is pure; where the state lives is a Store. Memory keeps it in this
// process, each key under its own small mutex (no global lock on the hot path). A store shared
// by several gateways, so that a key's limits hold across them, implements the same interface.
//
// A 429 throttles one bucket (REQUEST_WEIGHT, or ORDERS) until its Retry-After. A request that
// would consume a throttled bucket earns 418 and bans the whole key; a request that consumes
// only buckets that are not throttled is served (an order burst's -1015 does not stop the same
// key's position polls). During a ban every request is answered 418 and restarts the ban.
package ratelimit

import (
	"context"
	"errors"
	"time"

	"tradesvc/infra/check"
)

// Limits are one key's bucket sizes. Zero fields fall back to the limiter's defaults.
type Limits struct {
	// WeightPerMinute is the REQUEST_WEIGHT bucket (default 1200).
	WeightPerMinute int
	// Orders10s is the ORDERS bucket per 10 seconds (default 100).
	Orders10s int
	// Orders1m is the ORDERS bucket per minute (default 1200).
	Orders1m int
}

// Or returns l with zero fields taken from def.
func (l Limits) Or(def Limits) Limits {
	l.WeightPerMinute = check.PositiveOr(l.WeightPerMinute, def.WeightPerMinute)
	l.Orders10s = check.PositiveOr(l.Orders10s, def.Orders10s)
	l.Orders1m = check.PositiveOr(l.Orders1m, def.Orders1m)
	return l
}

// DefaultLimits are the spec's published defaults.
func DefaultLimits() Limits { return Limits{WeightPerMinute: 1200, Orders10s: 100, Orders1m: 1200} }

// DefaultBanSteps is the 418 escalation: 2 minutes, then 1 hour, then 24 hours. Each call
// returns a new slice: a configuration that changes its copy changes nobody else's.
func DefaultBanSteps() []time.Duration {
	return []time.Duration{2 * time.Minute, time.Hour, 24 * time.Hour}
}

// DefaultPolicy is the escalation of DefaultBanSteps, forgiven after 24 hours.
func DefaultPolicy() Policy { return Policy{BanSteps: DefaultBanSteps(), ForgiveAfter: 24 * time.Hour} }

// Config configures a Limiter.
type Config struct {
	// Defaults apply to every key whose own Limits fields are zero.
	Defaults Limits
	// BanSteps are successive ban durations; the last repeats. A ban more than
	// ForgiveAfter after the previous one ended starts from the first step again.
	BanSteps []time.Duration
	// ForgiveAfter resets the escalation (default 24 h).
	ForgiveAfter time.Duration
}

// Policy is the part of the configuration a Store applies.
func (c Config) Policy() Policy { return Policy{BanSteps: c.BanSteps, ForgiveAfter: c.ForgiveAfter} }

// Validate reports configuration errors.
func (c Config) Validate() error {
	var errs check.Problems
	errs.If(c.Defaults.WeightPerMinute <= 0 || c.Defaults.Orders10s <= 0 || c.Defaults.Orders1m <= 0, "ratelimit: default limits must be positive")
	errs.If(len(c.BanSteps) == 0, "ratelimit: at least one ban step is required")
	for _, s := range c.BanSteps {
		if s <= 0 {
			errs.Add(errors.New("ratelimit: ban steps must be positive"))
			break
		}
	}
	errs.If(c.ForgiveAfter <= 0, "ratelimit: ForgiveAfter must be positive")
	return errs.Err()
}

// Outcome is the verdict on one charge.
type Outcome int

const (
	// Allowed: the request goes on.
	Allowed Outcome = iota
	// WeightExceeded: 429 with -1003.
	WeightExceeded
	// OrdersExceeded: 429 with -1015.
	OrdersExceeded
	// Banned: 418; the key sent a request that would consume a bucket inside its
	// Retry-After, or sent anything during a ban.
	Banned
)

// Decision is the result of Charge: the outcome and, unless Allowed, how long to wait.
type Decision struct {
	Outcome    Outcome
	RetryAfter time.Duration
}

// Usage is what the usage headers report.
type Usage struct {
	Weight1m  int
	Orders10s int
	Orders1m  int
}

// Limiter applies the rule to the keys' state in its Store.
type Limiter struct {
	cfg   Config
	store Store
	// mem is store when it is this process's Memory: called directly, it saves the hot path
	// an indirect call.
	mem *Memory
}

// New builds a Limiter whose state lives in this process (Memory).
func New(cfg Config) (*Limiter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m := NewMemory(cfg.Policy())
	return &Limiter{cfg: cfg, store: m, mem: m}, nil
}

// NewWithStore builds a Limiter over store (built with cfg.Policy()); nil store: Memory.
func NewWithStore(cfg Config, store Store) (*Limiter, error) {
	if store == nil {
		return New(cfg)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m, _ := store.(*Memory)
	return &Limiter{cfg: cfg, store: store, mem: m}, nil
}

// Defaults are the limits of keys without their own values.
func (l *Limiter) Defaults() Limits { return l.cfg.Defaults }

// Charge adds weight and orders for the key id with limits lim (zero fields take the
// defaults) at now. Nothing is added unless the outcome is Allowed. A zero weight or zero
// orders does not consume (or check) that bucket. An error (a shared store unreachable)
// means nothing was decided, nor charged.
func (l *Limiter) Charge(ctx context.Context, id string, lim Limits, now time.Time, weight, orders int) (Decision, Usage, error) {
	c := Charge{Limits: lim.Or(l.cfg.Defaults), Now: now.UnixMilli(), Weight: weight, Orders: orders}
	if l.mem != nil {
		d, u := l.mem.charge(id, c)
		return d, u, nil
	}
	return l.store.Charge(ctx, id, c)
}

// Usage reads the key's counters at now without charging anything.
func (l *Limiter) Usage(ctx context.Context, id string, now time.Time) (Usage, error) {
	return l.store.Usage(ctx, id, now.UnixMilli())
}
