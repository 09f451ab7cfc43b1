package ratelimit

import (
	"sync"
	"testing"
	"time"
)

func newLimiter(t *testing.T) *Limiter {
	t.Helper()
	l, err := New(Config{Defaults: Limits{WeightPerMinute: 10, Orders10s: 3, Orders1m: 5}, BanSteps: DefaultBanSteps(), ForgiveAfter: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return l
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
		d, _ := l.Charge("k", Limits{}, now, 0, 0)
		if d.Outcome != Banned || d.RetryAfter != want {
			t.Fatalf("offence %d: %+v, want ban %v", i+1, d, want)
		}
		now = now.Add(want).Truncate(time.Minute).Add(time.Minute)
	}
	// more than 24 h after the last ban ended: back to the first step
	now = now.Add(25 * time.Hour)
	breach()
	if d, _ := l.Charge("k", Limits{}, now, 0, 0); d.RetryAfter != 2*time.Minute {
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

func TestConcurrentChargesAreExact(t *testing.T) {
	l, _ := New(Config{Defaults: Limits{WeightPerMinute: 1000, Orders10s: 1, Orders1m: 1}, BanSteps: DefaultBanSteps(), ForgiveAfter: time.Hour})
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
	l, _ := New(Config{Defaults: Limits{WeightPerMinute: 1 << 30, Orders10s: 1, Orders1m: 1}, BanSteps: DefaultBanSteps(), ForgiveAfter: time.Hour})
	now := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l.Charge("k", Limits{}, now, 1, 0)
		}
	})
}
