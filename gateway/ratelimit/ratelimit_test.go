package ratelimit

import (
	"context"
	"sync"
	"testing"
	"time"
)

// testLimiter is a Limiter over a store that never fails (Memory): the tests read verdicts.
type testLimiter struct{ l *Limiter }

func (tl testLimiter) Charge(id string, lim Limits, now time.Time, weight, orders int) (Decision, Usage) {
	d, u, err := tl.l.Charge(context.Background(), id, lim, now, weight, orders)
	if err != nil {
		panic(err) // Memory never fails
	}
	return d, u
}

func (tl testLimiter) Usage(id string, now time.Time) Usage {
	u, err := tl.l.Usage(context.Background(), id, now)
	if err != nil {
		panic(err)
	}
	return u
}

func newLimiter(t *testing.T) testLimiter {
	t.Helper()
	l, err := New(Config{Defaults: Limits{WeightPerMinute: 10, Orders10s: 3, Orders1m: 5}, BanSteps: DefaultBanSteps(), ForgiveAfter: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return testLimiter{l}
}

var t0 = time.UnixMilli(1_800_000_000_000).Truncate(time.Minute)

func TestConfigValidate(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Fatal("empty config accepted")
	}
}

func TestWeightWindowIsEpochAlignedMinute(t *testing.T) {
	l := newLimiter(t)
	d, u := l.Charge("k", Limits{}, t0.Add(59*time.Second), 10, 0)
	if d.Outcome != Allowed || u.Weight1m != 10 {
		t.Fatal(d, u)
	}
	d, _ = l.Charge("k", Limits{}, t0.Add(59*time.Second), 1, 0)
	if d.Outcome != WeightExceeded || d.RetryAfter != time.Second {
		t.Fatal(d)
	}
	// Same key, per-key limit larger than the default: allowed within the same window.
	l2 := newLimiter(t)
	l2.Charge("k", Limits{WeightPerMinute: 20}, t0, 10, 0)
	if d, _ := l2.Charge("k", Limits{WeightPerMinute: 20}, t0, 10, 0); d.Outcome != Allowed {
		t.Fatal(d)
	}
	if u := l2.Usage("k", t0.Add(time.Minute)); u.Weight1m != 0 {
		t.Fatal("window did not roll", u)
	}
	if u := l2.Usage("nobody", t0); u != (Usage{}) {
		t.Fatal(u)
	}
}

func TestOrderWindows(t *testing.T) {
	l := newLimiter(t)
	at := t0.Add(5 * time.Second)
	for i := 0; i < 3; i++ {
		if d, _ := l.Charge("k", Limits{}, at, 1, 1); d.Outcome != Allowed {
			t.Fatal(i, d)
		}
	}
	d, u := l.Charge("k", Limits{}, at, 1, 1)
	if d.Outcome != OrdersExceeded || d.RetryAfter != 5*time.Second || u.Orders10s != 3 || u.Weight1m != 3 {
		t.Fatal(d, u)
	}
	// the next 10 s window allows 2 more before the 1-minute bucket (5) is full
	at = t0.Add(10 * time.Second)
	for i := 0; i < 2; i++ {
		if d, _ := l.Charge("k", Limits{}, at, 0, 1); d.Outcome != Allowed {
			t.Fatal(i, d)
		}
	}
	// a batch counting 1 per item is refused whole when it does not fit
	d, u = l.Charge("k", Limits{}, at.Add(10*time.Second), 0, 1)
	if d.Outcome != OrdersExceeded || d.RetryAfter != 40*time.Second || u.Orders1m != 5 {
		t.Fatal(d, u)
	}
}

func TestBanEscalationAndForgiveness(t *testing.T) {
	l := newLimiter(t)
	now := t0
	breach := func() {
		t.Helper()
		l.Charge("k", Limits{}, now, 10, 0)
		if d, _ := l.Charge("k", Limits{}, now, 1, 0); d.Outcome != WeightExceeded {
			t.Fatal("no 429", d)
		}
	}
	for i, want := range []time.Duration{2 * time.Minute, time.Hour, 24 * time.Hour, 24 * time.Hour} {
		breach()
		d, _ := l.Charge("k", Limits{}, now, 1, 0)
		if d.Outcome != Banned || d.RetryAfter != want {
			t.Fatalf("offence %d: %+v, want ban %v", i+1, d, want)
		}
		now = now.Add(want).Truncate(time.Minute).Add(time.Minute)
	}
	// more than 24 h after the last ban ended: back to the first step
	now = now.Add(25 * time.Hour)
	breach()
	if d, _ := l.Charge("k", Limits{}, now, 1, 0); d.RetryAfter != 2*time.Minute {
		t.Fatal("not forgiven", d)
	}
}

func TestRetryingDuringBanLengthensIt(t *testing.T) {
	l := newLimiter(t)
	l.Charge("k", Limits{}, t0, 10, 0)
	l.Charge("k", Limits{}, t0, 1, 0)
	d, _ := l.Charge("k", Limits{}, t0, 1, 0)
	if d.RetryAfter != 2*time.Minute {
		t.Fatal(d)
	}
	d, _ = l.Charge("k", Limits{}, t0.Add(90*time.Second), 1, 0)
	if d.Outcome != Banned || d.RetryAfter != 2*time.Minute {
		t.Fatal("ban not restarted", d)
	}
	if d, _ := l.Charge("k", Limits{}, t0.Add(90*time.Second+2*time.Minute), 1, 0); d.Outcome != Allowed {
		t.Fatal("ban did not end", d)
	}
}

// After an ORDERS 429 (-1015), requests that consume only weight (a positions poll) are
// served; the next order-affecting request inside the Retry-After earns 418, which bans the
// whole key; every request during the ban is 418 and restarts it (issue 17, item 5).
func TestOrdersThrottleBansOnlyWhatConsumesOrders(t *testing.T) {
	l := newLimiter(t) // 10 weight/min, 3 orders/10 s, 5 orders/min
	at := t0.Add(2 * time.Second)
	for i := 0; i < 3; i++ {
		l.Charge("k", Limits{}, at, 0, 1)
	}
	if d, _ := l.Charge("k", Limits{}, at, 0, 1); d.Outcome != OrdersExceeded || d.RetryAfter != 8*time.Second {
		t.Fatal("no -1015", d)
	}
	// Reads during the ORDERS Retry-After: served, and counted.
	for i := 1; i <= 3; i++ {
		d, u := l.Charge("k", Limits{}, at.Add(time.Duration(i)*time.Second), 1, 0)
		if d.Outcome != Allowed || u.Weight1m != i || u.Orders10s != 3 {
			t.Fatalf("read %d after the orders 429: %+v %+v", i, d, u)
		}
	}
	// An order inside the Retry-After: 418 for 2 minutes, nothing consumed.
	at = at.Add(5 * time.Second) // 1 s before the 10 s window ends
	d, u := l.Charge("k", Limits{}, at, 0, 1)
	if d.Outcome != Banned || d.RetryAfter != 2*time.Minute || u.Orders10s != 3 {
		t.Fatalf("order inside Retry-After: %+v %+v, want 418 for 2m", d, u)
	}
	// The ban is the key's: a read is refused now, and restarts the ban.
	at = at.Add(30 * time.Second)
	if d, _ := l.Charge("k", Limits{}, at, 1, 0); d.Outcome != Banned || d.RetryAfter != 2*time.Minute {
		t.Fatalf("read during the ban: %+v, want 418 restarted at 2m", d)
	}
	if d, _ := l.Charge("k", Limits{}, at.Add(2*time.Minute-time.Millisecond), 1, 0); d.Outcome != Banned {
		t.Fatal("ban not lengthened", d)
	}
	// Once the (lengthened) ban is over, everything is served again.
	after := at.Add(4 * time.Minute)
	if d, _ := l.Charge("k", Limits{}, after, 1, 1); d.Outcome != Allowed {
		t.Fatal("not served after the ban", d)
	}
	// Another key was never affected.
	if d, _ := l.Charge("other", Limits{}, at, 1, 1); d.Outcome != Allowed {
		t.Fatal(d)
	}
}

// An order after the ORDERS Retry-After has passed is a fresh request: served, no ban.
func TestOrdersThrottleEndsWithItsRetryAfter(t *testing.T) {
	l := newLimiter(t)
	at := t0.Add(2 * time.Second)
	for i := 0; i < 4; i++ {
		l.Charge("k", Limits{}, at, 1, 1)
	}
	d, _ := l.Charge("k", Limits{}, at.Add(8*time.Second), 1, 1)
	if d.Outcome != Allowed {
		t.Fatalf("order after Retry-After: %+v", d)
	}
	// The 1-minute ORDERS bucket (5) throttles until the minute ends.
	l.Charge("k", Limits{}, at.Add(9*time.Second), 1, 1)
	d, _ = l.Charge("k", Limits{}, at.Add(20*time.Second), 1, 1)
	if d.Outcome != OrdersExceeded || d.RetryAfter != 38*time.Second {
		t.Fatalf("1-minute bucket: %+v", d)
	}
	// a read inside that Retry-After is served; an order inside it (even in a new 10 s
	// window) earns the ban
	if d, _ := l.Charge("k", Limits{}, at.Add(31*time.Second), 1, 0); d.Outcome != Allowed {
		t.Fatal(d)
	}
	if d, _ := l.Charge("k", Limits{}, at.Add(31*time.Second), 0, 1); d.Outcome != Banned {
		t.Fatal(d)
	}
}

// After a REQUEST_WEIGHT 429 (-1003) every request consumes the throttled bucket (all weigh
// at least 1): each one inside the Retry-After earns 418.
func TestWeightThrottleBansEveryRequest(t *testing.T) {
	l := newLimiter(t)
	l.Charge("k", Limits{}, t0, 10, 0)
	if d, _ := l.Charge("k", Limits{}, t0.Add(50*time.Second), 1, 0); d.Outcome != WeightExceeded || d.RetryAfter != 10*time.Second {
		t.Fatal(d)
	}
	// an order-only charge does not consume weight: it is decided on the ORDERS bucket
	if d, _ := l.Charge("k", Limits{}, t0.Add(51*time.Second), 0, 1); d.Outcome != Allowed {
		t.Fatal("order charge (weight already paid) refused", d)
	}
	if d, _ := l.Charge("k", Limits{}, t0.Add(52*time.Second), 1, 0); d.Outcome != Banned || d.RetryAfter != 2*time.Minute {
		t.Fatal(d)
	}
}

// A State is a plain value: a shared store can keep it anywhere and apply the same rule.
func TestStateRoundTripsThroughAStore(t *testing.T) {
	p := Policy{BanSteps: DefaultBanSteps(), ForgiveAfter: 24 * time.Hour}
	var saved State
	lim := Limits{WeightPerMinute: 2, Orders10s: 1, Orders1m: 1}
	for i, want := range []Outcome{Allowed, Allowed, WeightExceeded, Banned, Banned} {
		st := saved // load
		d, _ := st.Apply(&p, Charge{Limits: lim, Now: t0.UnixMilli() + int64(i), Weight: 1})
		saved = st // save
		if d.Outcome != want {
			t.Fatalf("charge %d: %v, want %v", i, d.Outcome, want)
		}
	}
	if saved.BanLevel != 0 || !saved.Banned {
		t.Fatalf("%+v", saved)
	}
}

type countingStore struct {
	Store
	charges int
}

func (c *countingStore) Charge(ctx context.Context, id string, ch Charge) (Decision, Usage, error) {
	c.charges++
	return c.Store.Charge(ctx, id, ch)
}

func TestLimiterUsesItsStore(t *testing.T) {
	cfg := Config{Defaults: DefaultLimits(), BanSteps: DefaultBanSteps(), ForgiveAfter: time.Hour}
	s := &countingStore{Store: NewMemory(cfg.Policy())}
	lim, err := NewWithStore(cfg, s)
	if err != nil {
		t.Fatal(err)
	}
	l := testLimiter{lim}
	if _, u := l.Charge("k", Limits{}, t0, 3, 1); u.Weight1m != 3 || s.charges != 1 {
		t.Fatal(u, s.charges)
	}
	if u := l.Usage("k", t0); u.Orders1m != 1 {
		t.Fatal(u)
	}
}

func TestConcurrentChargesAreExact(t *testing.T) {
	lim, _ := New(Config{Defaults: Limits{WeightPerMinute: 1000, Orders10s: 1, Orders1m: 1}, BanSteps: DefaultBanSteps(), ForgiveAfter: time.Hour})
	l := testLimiter{lim}
	var wg sync.WaitGroup
	var mu sync.Mutex
	allowed := 0
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				if d, _ := l.Charge("k", Limits{}, t0, 1, 0); d.Outcome == Allowed {
					mu.Lock()
					allowed++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if allowed != 1000 {
		t.Fatalf("allowed %d, want exactly 1000", allowed)
	}
}

func BenchmarkChargeParallel(b *testing.B) {
	lim, _ := New(Config{Defaults: Limits{WeightPerMinute: 1 << 30, Orders10s: 1, Orders1m: 1}, BanSteps: DefaultBanSteps(), ForgiveAfter: time.Hour})
	l := testLimiter{lim}
	now := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l.Charge("k", Limits{}, now, 1, 0)
		}
	})
}
