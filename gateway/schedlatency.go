package gateway

import (
	"math"
	"runtime/metrics"
	"sync"
	"time"
)

// schedLatencyMetric is how long goroutines waited, runnable, for a CPU (runtime/metrics).
const schedLatencyMetric = "/sched/latencies:seconds"

// SchedLatency reads the runtime's scheduling latencies: P99 is the 99th percentile of the
// waits since its previous call. Past a few milliseconds the process is short of CPU, and
// every answer it gives, -1008 included, queues behind the work it let in.
type SchedLatency struct {
	mu     sync.Mutex
	sample []metrics.Sample
	prev   []uint64
}

// NewSchedLatency starts the window at now.
func NewSchedLatency() *SchedLatency {
	s := &SchedLatency{sample: []metrics.Sample{{Name: schedLatencyMetric}}}
	s.P99()
	return s
}

// P99 returns the 99th percentile of the scheduling latencies since the previous call (0
// when there were none, or the runtime does not report them).
func (s *SchedLatency) P99() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	metrics.Read(s.sample)
	if s.sample[0].Value.Kind() != metrics.KindFloat64Histogram {
		return 0
	}
	h := s.sample[0].Value.Float64Histogram()
	q := windowQuantile(s.prev, h.Counts, h.Buckets, 0.99)
	s.prev = append(s.prev[:0], h.Counts...)
	return q
}

// windowQuantile is quantile q of the observations counted between the cumulative bucket
// counts prev and cur (prev nil: all of cur), as the upper bound of the bucket that holds it
// (buckets[i], buckets[i+1] bound counts[i]; an infinite bound reads as the lower one).
func windowQuantile(prev, cur []uint64, buckets []float64, q float64) time.Duration {
	var total uint64
	for i, c := range cur {
		total += c - at(prev, i)
	}
	if total == 0 {
		return 0
	}
	need := uint64(math.Ceil(q * float64(total)))
	var seen uint64
	for i, c := range cur {
		if seen += c - at(prev, i); seen >= need {
			upper := buckets[i+1]
			if math.IsInf(upper, 1) {
				upper = buckets[i]
			}
			return time.Duration(upper * float64(time.Second))
		}
	}
	return time.Duration(buckets[len(buckets)-1] * float64(time.Second))
}

func at(counts []uint64, i int) uint64 {
	if i < len(counts) {
		return counts[i]
	}
	return 0
}
