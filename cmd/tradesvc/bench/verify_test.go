package bench

import (
	"testing"
	"time"
)

func TestVerificationStallsOnlyWhenReadsSettleNothing(t *testing.T) {
	w := stallWatch{limit: 3 * time.Second, left: 10}
	steps := []struct {
		left, reads int64
		stop        bool
	}{
		{9, 5, false},  // an order settled
		{9, 9, false},  // reads, nothing settled: 1 s
		{9, 9, false},  // no reads (waiting for budgets): not a stall
		{9, 12, false}, // 2 s
		{8, 15, false}, // progress again: back to 0
		{8, 20, false}, // 1 s
		{8, 25, false}, // 2 s
		{8, 30, true},  // 3 s: stop
	}
	for i, s := range steps {
		if got := w.tick(time.Second, s.left, s.reads); got != s.stop {
			t.Fatalf("tick %d (%+v): stop %v, want %v", i, s, got, s.stop)
		}
	}
}

// Orders that never settle under per-minute budgets: reads come in a burst a minute. Once
// every order left was read again since the last one settled, the waits count as well.
func TestVerificationStallsWhenAWholePassSettlesNothing(t *testing.T) {
	w := stallWatch{limit: 3 * time.Second, left: 10}
	steps := []struct {
		left, reads int64
		stop        bool
	}{
		{4, 100, false}, // orders settled
		{4, 102, false}, // 1 s of reads
		{4, 102, false}, // waiting for budgets, 2 of the 4 left read since: not a stall
		{4, 104, false}, // 2 s: a whole pass read since the last settled
		{4, 104, true},  // waiting for budgets now counts: 3 s, stop
	}
	for i, s := range steps {
		if got := w.tick(time.Second, s.left, s.reads); got != s.stop {
			t.Fatalf("tick %d (%+v): stop %v, want %v", i, s, got, s.stop)
		}
	}
}
