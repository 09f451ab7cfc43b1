package ratelimit

import "time"

// Policy is the ban escalation a State follows.
type Policy struct {
	// BanSteps are successive ban durations; the last repeats.
	BanSteps []time.Duration
	// ForgiveAfter: a ban starting more than this after the previous one ended starts from
	// the first step again.
	ForgiveAfter time.Duration
}

func (p *Policy) step(level int) int64 {
	return p.BanSteps[min(level, len(p.BanSteps)-1)].Milliseconds()
}

// Charge is one request's demand on a key's buckets, with the key's resolved limits. Times
// are Unix ms.
type Charge struct {
	Limits Limits
	Now    int64
	Weight int
	Orders int
}

// State is one key's counters, throttles and ban (times in Unix ms). It is a plain value so
// that a shared Store can keep it anywhere; Apply is the whole rule.
type State struct {
	// Minute and TenSec are the starts of the current windows.
	Minute, TenSec int64
	// Weight, Orders10s and Orders1m are what the current windows consumed.
	Weight, Orders10s, Orders1m int
	// WeightThrottled and OrdersThrottled are when each bucket's last 429 Retry-After ends
	// (0: not throttled). A request that would consume the bucket before then earns a ban.
	WeightThrottled, OrdersThrottled int64
	// BanUntil is when the current ban ends; BanLevel is its step; Banned is set once the key
	// was ever banned (escalation starts at the first step otherwise).
	BanUntil int64
	BanLevel int
	Banned   bool
}

// roll moves the windows to now.
func (s *State) roll(now int64) {
	if m := now - now%60_000; m != s.Minute {
		s.Minute, s.Weight, s.Orders1m = m, 0, 0
	}
	if t := now - now%10_000; t != s.TenSec {
		s.TenSec, s.Orders10s = t, 0
	}
}

// Usage is what the usage headers report after rolling the windows to now.
func (s *State) Usage(now int64) Usage {
	s.roll(now)
	return Usage{Weight1m: s.Weight, Orders10s: s.Orders10s, Orders1m: s.Orders1m}
}

// Apply decides c against the state and, when Allowed, consumes it. In order:
//   - during a ban: Banned, and the ban restarts at its step from now (retrying through a 418
//     lengthens it);
//   - a request that would consume a bucket still inside its 429's Retry-After: a new ban, one
//     step above the last (continuing after a 429 is what earns 418);
//   - a bucket that cannot take the request: 429 (WeightExceeded or OrdersExceeded), that
//     bucket throttled until its window ends, nothing consumed;
//   - otherwise Allowed.
//
// A request that consumes only buckets that are not throttled is decided on them alone: a
// -1015 from an order burst does not stop the key's reads (they consume weight only).
func (s *State) Apply(p *Policy, c Charge) (Decision, Usage) {
	now := c.Now
	s.roll(now)
	if now < s.BanUntil {
		s.BanUntil = max(s.BanUntil, now+p.step(s.BanLevel))
		return s.banned(now), s.usage()
	}
	if (c.Weight > 0 && now < s.WeightThrottled) || (c.Orders > 0 && now < s.OrdersThrottled) {
		s.ban(p, now)
		return s.banned(now), s.usage()
	}
	if c.Weight > 0 && s.Weight+c.Weight > c.Limits.WeightPerMinute {
		s.WeightThrottled = s.Minute + 60_000
		return s.throttled(WeightExceeded, s.WeightThrottled, now), s.usage()
	}
	if c.Orders > 0 {
		if s.Orders10s+c.Orders > c.Limits.Orders10s {
			s.OrdersThrottled = s.TenSec + 10_000
			return s.throttled(OrdersExceeded, s.OrdersThrottled, now), s.usage()
		}
		if s.Orders1m+c.Orders > c.Limits.Orders1m {
			s.OrdersThrottled = s.Minute + 60_000
			return s.throttled(OrdersExceeded, s.OrdersThrottled, now), s.usage()
		}
	}
	s.Weight += c.Weight
	s.Orders10s += c.Orders
	s.Orders1m += c.Orders
	return Decision{Outcome: Allowed}, s.usage()
}

func (s *State) usage() Usage {
	return Usage{Weight1m: s.Weight, Orders10s: s.Orders10s, Orders1m: s.Orders1m}
}

func (s *State) banned(now int64) Decision {
	return Decision{Outcome: Banned, RetryAfter: time.Duration(s.BanUntil-now) * time.Millisecond}
}

func (s *State) throttled(o Outcome, until, now int64) Decision {
	return Decision{Outcome: o, RetryAfter: time.Duration(until-now) * time.Millisecond}
}

// ban starts a new ban one step above the previous one, unless the previous ban ended long
// enough ago to be forgiven. The throttles it punished end with it.
func (s *State) ban(p *Policy, now int64) {
	switch {
	case !s.Banned || now-s.BanUntil > p.ForgiveAfter.Milliseconds():
		s.BanLevel = 0
	case s.BanLevel < len(p.BanSteps)-1:
		s.BanLevel++
	}
	s.Banned = true
	s.WeightThrottled, s.OrdersThrottled = 0, 0
	s.BanUntil = now + p.step(s.BanLevel)
}
