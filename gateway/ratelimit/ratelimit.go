// Package ratelimit keeps the per-key request-weight and order counters of one gateway
// instance, and the 429 → 418 ban escalation. Windows are fixed and aligned to the Unix
// epoch (a minute window opens at :00), so the usage headers read like a wall clock.
// Each key has its own small mutex; there is no global lock on the hot path.
package ratelimit

import (
	"errors"
	"sync"
	"time"
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
	if l.WeightPerMinute <= 0 {
		l.WeightPerMinute = def.WeightPerMinute
	}
	if l.Orders10s <= 0 {
		l.Orders10s = def.Orders10s
	}
	if l.Orders1m <= 0 {
		l.Orders1m = def.Orders1m
	}
	return l
}

// DefaultLimits are the spec's published defaults.
func DefaultLimits() Limits { return Limits{WeightPerMinute: 1200, Orders10s: 100, Orders1m: 1200} }

// DefaultBanSteps is the 418 escalation: 2 minutes, then 1 hour, then 24 hours. Each call
// returns a new slice: a configuration that changes its copy changes nobody else's.
func DefaultBanSteps() []time.Duration {
	return []time.Duration{2 * time.Minute, time.Hour, 24 * time.Hour}
}

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

// Validate reports configuration errors.
func (c Config) Validate() error {
	var errs []error
	if c.Defaults.WeightPerMinute <= 0 || c.Defaults.Orders10s <= 0 || c.Defaults.Orders1m <= 0 {
		errs = append(errs, errors.New("ratelimit: default limits must be positive"))
	}
	if len(c.BanSteps) == 0 {
		errs = append(errs, errors.New("ratelimit: at least one ban step is required"))
	}
	for _, s := range c.BanSteps {
		if s <= 0 {
			errs = append(errs, errors.New("ratelimit: ban steps must be positive"))
			break
		}
	}
	if c.ForgiveAfter <= 0 {
		errs = append(errs, errors.New("ratelimit: ForgiveAfter must be positive"))
	}
	return errors.Join(errs...)
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
	// Banned: 418; the key kept sending after a 429 (or during a ban).
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

// Limiter holds the counters of every key seen by this instance.
type Limiter struct {
	cfg  Config
	keys sync.Map // key id → *bucket
}

// New builds a Limiter.
func New(cfg Config) (*Limiter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Limiter{cfg: cfg}, nil
}

// Defaults are the limits of keys without their own values.
func (l *Limiter) Defaults() Limits { return l.cfg.Defaults }

// bucket is one key's state. All times are Unix ms.
type bucket struct {
	mu        sync.Mutex
	minute    int64 // start of the current minute window
	tenSec    int64 // start of the current 10-second window
	weight    int
	orders10  int
	orders1m  int
	throttled int64 // a 429 was answered; until then, any request earns a ban
	banUntil  int64
	banLevel  int // index into BanSteps of the last ban
	banned    bool
}

func (l *Limiter) bucket(id string) *bucket {
	if b, ok := l.keys.Load(id); ok {
		return b.(*bucket)
	}
	b, _ := l.keys.LoadOrStore(id, &bucket{})
	return b.(*bucket)
}

// roll moves the windows to now.
func (b *bucket) roll(now int64) {
	if m := now - now%60_000; m != b.minute {
		b.minute, b.weight, b.orders1m = m, 0, 0
	}
	if t := now - now%10_000; t != b.tenSec {
		b.tenSec, b.orders10 = t, 0
	}
}

func (b *bucket) usage() Usage {
	return Usage{Weight1m: b.weight, Orders10s: b.orders10, Orders1m: b.orders1m}
}

// Charge adds weight and orders for the key id with limits lim (zero fields take the
// defaults) at now. Nothing is added unless the outcome is Allowed. A request arriving while
// the key is banned, or after a 429 and before its Retry-After elapsed, is answered Banned and
// (re)starts a ban at the next escalation step: retrying through a 418 lengthens the ban.
func (l *Limiter) Charge(id string, lim Limits, now time.Time, weight, orders int) (Decision, Usage) {
	lim = lim.Or(l.cfg.Defaults)
	ms := now.UnixMilli()
	b := l.bucket(id)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.roll(ms)
	if ms < b.banUntil {
		// Retrying during a ban: restart the ban at its current step from now.
		b.banUntil = max(b.banUntil, ms+l.step(b.banLevel))
		return Decision{Outcome: Banned, RetryAfter: time.Duration(b.banUntil-ms) * time.Millisecond}, b.usage()
	}
	if ms < b.throttled {
		b.ban(ms, l)
		return Decision{Outcome: Banned, RetryAfter: time.Duration(b.banUntil-ms) * time.Millisecond}, b.usage()
	}
	if b.weight+weight > lim.WeightPerMinute {
		b.throttled = b.minute + 60_000
		return Decision{Outcome: WeightExceeded, RetryAfter: time.Duration(b.throttled-ms) * time.Millisecond}, b.usage()
	}
	if orders > 0 {
		if b.orders10+orders > lim.Orders10s {
			b.throttled = b.tenSec + 10_000
			return Decision{Outcome: OrdersExceeded, RetryAfter: time.Duration(b.throttled-ms) * time.Millisecond}, b.usage()
		}
		if b.orders1m+orders > lim.Orders1m {
			b.throttled = b.minute + 60_000
			return Decision{Outcome: OrdersExceeded, RetryAfter: time.Duration(b.throttled-ms) * time.Millisecond}, b.usage()
		}
	}
	b.weight += weight
	b.orders10 += orders
	b.orders1m += orders
	return Decision{Outcome: Allowed}, b.usage()
}

// ban starts a new ban one step above the previous one, unless the previous ban ended long
// enough ago to be forgiven.
func (b *bucket) ban(ms int64, l *Limiter) {
	switch {
	case !b.banned || ms-b.banUntil > l.cfg.ForgiveAfter.Milliseconds():
		b.banLevel = 0
	case b.banLevel < len(l.cfg.BanSteps)-1:
		b.banLevel++
	}
	b.banned = true
	b.throttled = 0
	b.banUntil = ms + l.step(b.banLevel)
}

func (l *Limiter) step(level int) int64 {
	return l.cfg.BanSteps[min(level, len(l.cfg.BanSteps)-1)].Milliseconds()
}

// Usage reads the key's counters at now without charging anything.
func (l *Limiter) Usage(id string, now time.Time) Usage {
	v, ok := l.keys.Load(id)
	if !ok {
		return Usage{}
	}
	b := v.(*bucket)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.roll(now.UnixMilli())
	return b.usage()
}
