package perkey

import (
	"sync"
	"sync/atomic"
	"testing"
)

func TestEnsureCreatesEachKeysStateOnceUnderRacingCallers(t *testing.T) {
	var m Map[string, int]
	if m.Get("a") != nil || m.Len() != 0 {
		t.Fatal("a new map holds state")
	}
	var created atomic.Int32
	var wg sync.WaitGroup
	got := make([]*int, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = m.Ensure("a", func() *int { created.Add(1); v := 7; return &v })
		}()
	}
	wg.Wait()
	if created.Load() != 1 {
		t.Fatalf("created %d times, want once", created.Load())
	}
	for _, v := range got {
		if v != got[0] || *v != 7 {
			t.Fatalf("callers got different states: %p and %p", v, got[0])
		}
	}
	m.Ensure("b", func() *int { v := 8; return &v })
	sum := 0
	m.Range(func(_ string, v *int) { sum += *v })
	if m.Get("a") != got[0] || m.Len() != 2 || sum != 15 {
		t.Fatalf("Get/Len/Range disagree: len %d, sum %d", m.Len(), sum)
	}
}
