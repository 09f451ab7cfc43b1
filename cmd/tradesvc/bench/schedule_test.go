package bench

import (
	"testing"
	"time"
)

func TestScheduleIsEvenAndOpenLoop(t *testing.T) {
	s := Schedule{Rate: 200, Duration: 60 * time.Second}
	if s.Count() != 12000 {
		t.Fatalf("Count = %d, want 12000", s.Count())
	}
	if s.Offset(0) != 0 || s.Offset(1) != 5*time.Millisecond || s.Offset(200) != time.Second {
		t.Fatalf("offsets %v %v %v", s.Offset(0), s.Offset(1), s.Offset(200))
	}
	// A sender that wakes 12 ms late sends everything due meanwhile at once: the offered rate
	// does not depend on how promptly it wakes (nor on the answers).
	if end := s.Due(0, 12*time.Millisecond); end != 3 {
		t.Fatalf("due by 12 ms from 0: %d, want 3 (0, 5 and 10 ms)", end)
	}
	if end := s.Due(3, 12*time.Millisecond); end != 3 {
		t.Fatalf("nothing more is due: %d", end)
	}
	if end := s.Due(3, time.Hour); end != s.Count() {
		t.Fatalf("the schedule ends at Count: %d", end)
	}
	if (Schedule{Rate: 1000, Duration: 333 * time.Millisecond}).Count() != 333 {
		t.Fatal("fractional rate*duration rounds down")
	}
	if (Schedule{Rate: 0, Duration: time.Second}).Count() != 0 {
		t.Fatal("no rate, no orders")
	}
}

func TestAssignmentSpreadsOrdersOverKeysAndTheirLogins(t *testing.T) {
	logins := []int{1, 2, 3} // key 0 has one login, key 1 two, key 2 three
	perKey := map[int]int{}
	perLogin := map[[2]int]int{}
	for i := range 1800 {
		k, l := Assignment(i, 3, func(k int) int { return logins[k] })
		if l >= logins[k] {
			t.Fatalf("order %d: login index %d of key %d out of range", i, l, k)
		}
		perKey[k]++
		perLogin[[2]int{k, l}]++
	}
	for k := range 3 {
		if perKey[k] != 600 {
			t.Fatalf("key %d carries %d orders, want 600", k, perKey[k])
		}
		for l := range logins[k] {
			if perLogin[[2]int{k, l}] != 600/logins[k] {
				t.Fatalf("key %d login %d carries %d, want %d", k, l, perLogin[[2]int{k, l}], 600/logins[k])
			}
		}
	}
}
