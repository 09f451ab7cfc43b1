package gateway

import (
	"math"
	"testing"
	"time"
)

func TestWindowQuantileReadsOnlyTheWindow(t *testing.T) {
	buckets := []float64{0, 0.001, 0.01, 0.1, math.Inf(1)}
	prev := []uint64{100, 0, 0, 0}
	cur := []uint64{100, 99, 1, 0} // the window: 99 of 1-10 ms, one of 10-100 ms
	if got := windowQuantile(prev, cur, buckets, 0.99); got != 10*time.Millisecond {
		t.Fatalf("p99 of the window = %v, want 10ms", got)
	}
	if got := windowQuantile(prev, cur, buckets, 1); got != 100*time.Millisecond {
		t.Fatalf("max of the window = %v, want 100ms", got)
	}
	if got := windowQuantile(prev, cur, buckets, 0.5); got != 10*time.Millisecond {
		t.Fatalf("p50 of the window = %v, want 10ms (the 100 earlier ones under 1 ms left out)", got)
	}
	if got := windowQuantile(nil, cur, buckets, 0.5); got != time.Millisecond {
		t.Fatalf("p50 of everything = %v, want 1ms", got)
	}
	if got := windowQuantile(cur, cur, buckets, 0.99); got != 0 {
		t.Fatalf("p99 of an empty window = %v, want 0", got)
	}
	if got := windowQuantile(nil, []uint64{0, 0, 0, 5}, buckets, 0.99); got != 100*time.Millisecond {
		t.Fatalf("p99 in the open-ended bucket = %v, want its lower bound 100ms", got)
	}
}

func TestSchedLatencyReadsTheRuntime(t *testing.T) {
	s := NewSchedLatency()
	done := make(chan struct{})
	for range 50 {
		go func() { <-done }()
	}
	close(done)
	time.Sleep(10 * time.Millisecond)
	if got := s.P99(); got <= 0 || got > time.Minute {
		t.Fatalf("p99 %v after 50 goroutines ran: want a scheduling latency read from the runtime", got)
	}
}
