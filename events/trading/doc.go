// Package trading is the trading vocabulary of the service, in one place: the platform's
// enumerations with their wire names and integers (order type, side, time in force, raw
// order state, deal entry, action and reason, change actions, the symbol's trade, execution,
// fill, expiration, order and swap modes), the operation kinds with one table that says what
// each kind means, the order statuses and the status derivation, and the models that the
// command side and the query side share (operation, order, position, symbol specification).
//
// Every other folder asks this package instead of keeping its own switch over kinds or its
// own table of names. It imports nothing of the service but events (the catalogue of the
// log, whose payloads carry the wire names and raw integers this package interprets).
package trading

import (
	"slices"
	"strconv"
)

// unknown names a platform value this build does not know: "UNKNOWN_<n>", so that a new
// platform value never crashes a reader (the spec's rule for unmapped values).
func unknown(n int) string { return "UNKNOWN_" + strconv.Itoa(n) }

// enum is the wire names of a platform enumeration numbered from 0 (value n is names[n]):
// every enumeration of the package prints and parses through one.
type enum[T ~int] []string

// name is the wire name of v, or unknown(v) outside the table.
func (e enum[T]) name(v T) string {
	if v >= 0 && int(v) < len(e) {
		return e[v]
	}
	return unknown(int(v))
}

// parse reads a wire name; ok is false (and the value -1) for a name the table lacks.
func (e enum[T]) parse(s string) (T, bool) {
	i := slices.Index(e, s)
	return T(i), i >= 0
}

// flags names the bits of a platform bitmask: bit i is names[i].
type flags[T ~int] []string

// list names the bits set in mask, in bit order (never nil).
func (f flags[T]) list(mask T) []string {
	out := []string{}
	for bit, n := range f {
		if mask&(1<<bit) != 0 {
			out = append(out, n)
		}
	}
	return out
}
