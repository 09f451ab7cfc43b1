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

import "strconv"

// unknown names a platform value this build does not know: "UNKNOWN_<n>", so that a new
// platform value never crashes a reader (the spec's rule for unmapped values).
func unknown(n int) string { return "UNKNOWN_" + strconv.Itoa(n) }

// name is names[n], or unknown(n) outside the table.
func name(names []string, n int) string {
	if n >= 0 && n < len(names) {
		return names[n]
	}
	return unknown(n)
}

// index is the position of s in names, -1 when absent.
func index(names []string, s string) int {
	for i, n := range names {
		if n == s {
			return i
		}
	}
	return -1
}
