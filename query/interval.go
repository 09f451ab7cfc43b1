package query

import "tradesvc/events"

// Interval is a kline interval; its value is the bucket length in milliseconds.
type Interval int64

// minuteMs is the length of the 1-minute bars every interval is aggregated from.
const minuteMs = 60_000

// intervals lists the supported kline intervals (1w and 1M are not supported).
var intervals = map[string]Interval{
	"1m": 1 * minuteMs, "5m": 5 * minuteMs, "15m": 15 * minuteMs, "30m": 30 * minuteMs,
	"1h": 60 * minuteMs, "2h": 120 * minuteMs, "4h": 240 * minuteMs, "1d": 1440 * minuteMs,
}

// ParseInterval resolves a wire interval name or answers -1120.
func ParseInterval(s string) (Interval, error) {
	if iv, ok := intervals[s]; ok {
		return iv, nil
	}
	return 0, events.Reject(events.CodeInvalidInterval, "Invalid interval.")
}

// Ms is the bucket length in milliseconds.
func (iv Interval) Ms() int64 { return int64(iv) }

// Floor is the open time of the epoch-aligned UTC bucket containing t.
func (iv Interval) Floor(t int64) int64 {
	m := int64(iv)
	r := t % m
	if r < 0 {
		r += m
	}
	return t - r
}

// Ceil is the open time of the first bucket opening at or after t.
func (iv Interval) Ceil(t int64) int64 {
	f := iv.Floor(t)
	if f == t {
		return t
	}
	return f + int64(iv)
}
