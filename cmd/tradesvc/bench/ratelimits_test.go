package bench

import "testing"

func TestKeysNeededFollowTheTightestBudget(t *testing.T) {
	def := DefaultLimits()
	// ORDERS 100 per 10 s is the tightest default: 10/s, 8/s at 80 %.
	if r := def.OrderRate(0.8); r != 8 {
		t.Fatalf("default OrderRate(0.8) = %v, want 8", r)
	}
	if n := KeysFor(1000, def.OrderRate(0.8)); n != 125 {
		t.Fatalf("1000/s needs %d keys, want 125", n)
	}
	if n := KeysFor(200, def.OrderRate(0.8)); n != 25 {
		t.Fatalf("200/s needs %d keys, want 25", n)
	}
	if n := KeysFor(201, 8); n != 26 {
		t.Fatalf("201/s needs %d keys, want 26", n)
	}
	// A key whose weight budget is smaller binds on weight (one order weighs 1).
	small := Limits{WeightPerMinute: 300, Orders10s: 100, Orders1m: 1200}
	if r := small.OrderRate(1); r != 5 {
		t.Fatalf("weight-bound OrderRate = %v, want 5", r)
	}
	if KeysFor(0, 8) != 0 {
		t.Fatal("no rate needs no key")
	}
}

func TestLimitsAreReadFromExchangeInfo(t *testing.T) {
	info := exchangeInfo{RateLimits: []rateLimit{{"ORDERS", "SECOND", 10, 50}, {"REQUEST_WEIGHT", "MINUTE", 1, 6000}}}
	l := limitsOf(info)
	if l != (Limits{WeightPerMinute: 6000, Orders10s: 50, Orders1m: 1200}) {
		t.Fatalf("limitsOf = %+v (an unlisted bucket keeps the default)", l)
	}
}
