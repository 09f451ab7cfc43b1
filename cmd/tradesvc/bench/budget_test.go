package bench

import (
	"net/http"
	"testing"
	"time"
)

func TestBudgetPacesReadsWithinTheServersMinuteWindows(t *testing.T) {
	b := newBudget(3)
	t0 := time.UnixMilli(10*60000 + 30000) // half way through a minute
	for i := range 3 {
		if w := b.take(t0, 1); w != 0 {
			t.Fatalf("take %d within budget waited %v", i, w)
		}
	}
	w := b.take(t0, 1)
	if want := 30*time.Second + windowGuard; w != want {
		t.Fatalf("over budget: wait %v, want %v (the next window, guarded)", w, want)
	}
	if w := b.take(t0.Add(w), 1); w != 0 {
		t.Fatalf("in the next window: wait %v", w)
	}
	// The server's count wins when it is higher: other requests of the key spent weight.
	b = newBudget(10)
	b.take(t0, 1)
	b.observe(t0, header(headerUsedWeight, "10"))
	if w := b.take(t0, 1); w == 0 {
		t.Fatal("a key the server says is spent must wait")
	}
}

func TestBudgetPausesAKeyAnswered429(t *testing.T) {
	b := newBudget(100)
	t0 := time.UnixMilli(1_000_000)
	b.pause(t0, header(headerRetryAfter, "7"))
	if !b.pausedAt(t0.Add(6*time.Second)) || b.pausedAt(t0.Add(7*time.Second)) {
		t.Fatal("paused for Retry-After seconds")
	}
	if w := b.take(t0.Add(time.Second), 1); w != 6*time.Second {
		t.Fatalf("take while paused waits %v, want 6s", w)
	}
	b = newBudget(100)
	b.pause(t0, http.Header{})
	if !b.pausedAt(t0.Add(defaultRetryAfter - time.Millisecond)) {
		t.Fatal("without Retry-After the pause is the default")
	}
}

func TestUsageDecidesWhetherTheLoadFitsTheCurrentWindows(t *testing.T) {
	l := DefaultLimits()
	h := header(headerUsedWeight, "30", headerOrders10s, "10", headerOrders1m, "25")
	u := usageOf(h)
	if u != (usage{weight: 30, orders10s: 10, orders1m: 25}) {
		t.Fatalf("usageOf = %+v", u)
	}
	if !u.fresh(l, 8) {
		t.Fatal("10 orders in the 10 s window leave room for 80 more")
	}
	if (usage{orders10s: 20}).fresh(l, 8) {
		t.Fatal("20 + 80 orders would pass 95 % of 100")
	}
	if (usage{weight: 700}).fresh(l, 8) {
		t.Fatal("700 + 480 weight would pass 95 % of 1200")
	}
}

// header builds a response header from name, value pairs, canonicalised as on the wire.
func header(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}
