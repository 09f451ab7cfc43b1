package bench

import (
	"math"
	"slices"
	"time"
)

// Summary is the distribution of a set of durations, in milliseconds for the report.
type Summary struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50Ms"`
	P90   float64 `json:"p90Ms"`
	P99   float64 `json:"p99Ms"`
	Max   float64 `json:"maxMs"`
	Mean  float64 `json:"meanMs"`
}

// Summarize sorts d in place and returns its percentiles. A percentile is the nearest-rank
// value (the smallest sample at or above that fraction of the samples), so p99 of 100
// samples is the 99th, and a single slow sample in 100 shows at max but not at p99.
func Summarize(d []time.Duration) Summary {
	if len(d) == 0 {
		return Summary{}
	}
	slices.Sort(d)
	var sum time.Duration
	for _, v := range d {
		sum += v
	}
	return Summary{Count: len(d), P50: ms(Percentile(d, 50)), P90: ms(Percentile(d, 90)), P99: ms(Percentile(d, 99)),
		Max: ms(d[len(d)-1]), Mean: ms(sum / time.Duration(len(d)))}
}

// Percentile returns the nearest-rank p-th percentile of sorted (ascending) samples; zero
// for none.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// ms is a duration in milliseconds rounded to the microsecond, as the report prints it.
func ms(d time.Duration) float64 { return math.Round(float64(d.Microseconds())) / 1000 }
