package bench

import (
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Usage headers of every keyed answer (the spec's "Limits").
const (
	headerUsedWeight  = "X-SVC-USED-WEIGHT-1M"
	headerOrders10s   = "X-SVC-ORDER-COUNT-10S"
	headerOrders1m    = "X-SVC-ORDER-COUNT-1M"
	headerRetryAfter  = "Retry-After"
	windowGuard       = 250 * time.Millisecond // after a window opens, before it is trusted
	defaultRetryAfter = 10 * time.Second
)

// budget paces one key's REST reads within its REQUEST_WEIGHT budget. The server's windows
// are fixed minutes aligned to the epoch, so the budget counts per minute of the server's
// clock and believes the usage header over its own count: weight other requests of the key
// spent (its orders, another process) shows there. A key that was answered 429 or 418 is
// paused until its Retry-After has passed, since continuing earns a longer ban.
type budget struct {
	mu     sync.Mutex
	limit  int   // weight this client may use per window
	window int64 // the minute (server clock) used counts in
	used   int
	paused time.Time
}

func newBudget(limit int) *budget { return &budget{limit: max(limit, 1)} }

func minuteOf(t time.Time) int64 { return t.UnixMilli() / 60000 }

// take reserves cost in the window of now and returns 0, or returns how long to wait before
// asking again (the next window, or the end of a pause).
func (b *budget) take(now time.Time, cost int) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if now.Before(b.paused) {
		return b.paused.Sub(now)
	}
	if w := minuteOf(now.Add(-windowGuard)); w != b.window {
		b.window, b.used = w, 0
	}
	if b.used+cost <= b.limit {
		b.used += cost
		return 0
	}
	next := time.UnixMilli((b.window + 1) * 60000).Add(windowGuard)
	return max(next.Sub(now), time.Millisecond)
}

// observe takes the usage header of an answer received at now.
func (b *budget) observe(now time.Time, h http.Header) {
	used, err := strconv.Atoi(h.Get(headerUsedWeight))
	if err != nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if minuteOf(now.Add(-windowGuard)) == b.window && used > b.used {
		b.used = used
	}
}

// pause stops the key until Retry-After (seconds) from now has passed.
func (b *budget) pause(now time.Time, h http.Header) {
	d := defaultRetryAfter
	if s, err := strconv.Atoi(h.Get(headerRetryAfter)); err == nil && s > 0 {
		d = time.Duration(s) * time.Second
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if until := now.Add(d); until.After(b.paused) {
		b.paused = until
	}
}

// pausedAt reports whether the key is paused at now.
func (b *budget) pausedAt(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return now.Before(b.paused)
}

// usage is what a keyed answer says the key has used in the current windows.
type usage struct {
	weight, orders10s, orders1m int
}

func usageOf(h http.Header) usage {
	n := func(name string) int {
		v, _ := strconv.Atoi(h.Get(name))
		return v
	}
	return usage{weight: n(headerUsedWeight), orders10s: n(headerOrders10s), orders1m: n(headerOrders1m)}
}

// fresh reports whether a key that has used u in the current windows can carry rate orders
// per second for a whole window more and stay under 95 % of each of its budgets l: if not,
// the load waits for the next minute (every window of the server opens then).
func (u usage) fresh(l Limits, rate float64) bool {
	const most = 0.95
	return float64(u.orders10s)+rate*10 <= most*float64(l.Orders10s) &&
		float64(u.orders1m)+rate*60 <= most*float64(l.Orders1m) &&
		float64(u.weight)+rate*60+20 <= most*float64(l.WeightPerMinute)
}
