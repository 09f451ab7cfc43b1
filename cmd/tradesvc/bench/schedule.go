package bench

import (
	"math"
	"time"
)

// Schedule is an open-loop arrival schedule: Count orders, order i due Offset(i) after the
// start, evenly spaced at Rate per second. Nothing about earlier answers changes it.
type Schedule struct {
	Rate     float64
	Duration time.Duration
}

// Count is how many orders the schedule sends: the rate times the duration, rounded down.
func (s Schedule) Count() int {
	if s.Rate <= 0 || s.Duration <= 0 {
		return 0
	}
	return int(math.Floor(s.Rate*s.Duration.Seconds() + 1e-9))
}

// Offset is when order i is due, from the start.
func (s Schedule) Offset(i int) time.Duration {
	return time.Duration(float64(i) * float64(time.Second) / s.Rate)
}

// Due returns the orders due at or before elapsed (since the start), from next on: the
// half-open range [next, end). The sender calls it whenever it wakes, so a late wake-up
// sends everything that fell due meanwhile and the offered rate stays the schedule's.
func (s Schedule) Due(next int, elapsed time.Duration) (end int) {
	n := s.Count()
	end = next
	for end < n && s.Offset(end) <= elapsed {
		end++
	}
	return end
}

// Assignment says which key and which of its logins send order i: keys in turn, and each
// key's logins in turn over its own orders, so every key carries Rate/keys and every login
// of a key an equal share of it.
func Assignment(i, keys int, loginsOf func(k int) int) (key, login int) {
	key = i % keys
	return key, (i / keys) % loginsOf(key)
}
