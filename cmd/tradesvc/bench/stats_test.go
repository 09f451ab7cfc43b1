package bench

import (
	"testing"
	"time"
)

func TestPercentilesAreNearestRank(t *testing.T) {
	var d []time.Duration
	for i := 100; i >= 1; i-- { // unsorted on purpose: Summarize sorts
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	s := Summarize(d)
	if s.Count != 100 || s.P50 != 50 || s.P90 != 90 || s.P99 != 99 || s.Max != 100 || s.Mean != 50.5 {
		t.Fatalf("Summarize(1..100 ms) = %+v", s)
	}
	one := Summarize([]time.Duration{1500 * time.Microsecond})
	if one.P50 != 1.5 || one.P99 != 1.5 || one.Max != 1.5 {
		t.Fatalf("one sample: %+v", one)
	}
	if (Summarize(nil) != Summary{}) {
		t.Fatal("no samples must give a zero summary")
	}
	// One slow sample in a hundred shows at max, not at p99.
	d = d[:0]
	for range 99 {
		d = append(d, time.Millisecond)
	}
	d = append(d, time.Second)
	if s := Summarize(d); s.P99 != 1 || s.Max != 1000 {
		t.Fatalf("one outlier in 100: %+v", s)
	}
}
