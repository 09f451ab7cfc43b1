package bench

import (
	"math"
)

// Limits are one key's rate-limit budgets as GET /v1/exchangeInfo reports them with the key
// header (the spec's "Limits": per API key, tunable per key).
type Limits struct {
	WeightPerMinute int `json:"weightPerMinute"`
	Orders10s       int `json:"orders10s"`
	Orders1m        int `json:"orders1m"`
}

// DefaultLimits are the spec's published defaults.
func DefaultLimits() Limits { return Limits{WeightPerMinute: 1200, Orders10s: 100, Orders1m: 1200} }

// OrderRate is how many orders per second a key may send for ever under l, using only the
// fraction usage of each budget: every order counts once in both ORDERS windows and weighs 1.
// The headroom absorbs the jitter between the client's schedule and the server's windows
// (fixed, aligned to the epoch), and leaves weight for the listen key and the verification.
func (l Limits) OrderRate(usage float64) float64 {
	r := math.Min(float64(l.Orders10s)/10, float64(l.Orders1m)/60)
	r = math.Min(r, float64(l.WeightPerMinute)/60)
	return r * usage
}

// KeysFor is how many keys, each allowed perKey orders per second, carry rate orders per
// second.
func KeysFor(rate, perKey float64) int {
	if rate <= 0 {
		return 0
	}
	if perKey <= 0 {
		return math.MaxInt32
	}
	return int(math.Ceil(rate/perKey - 1e-9))
}
