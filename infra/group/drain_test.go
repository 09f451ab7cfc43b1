package group

import (
	"slices"
	"sync"
	"testing"
)

// What is handed in while a run is under way goes together in the next run, in the order it
// was handed in, and Wait returns once everything has run.
func TestDrainRunsInOrderAndMergesWhatComesDuringARun(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	var mu sync.Mutex
	var runs [][]int
	d := NewDrain(func(items []int) {
		mu.Lock()
		first := len(runs) == 0
		runs = append(runs, slices.Clone(items))
		mu.Unlock()
		if first {
			close(started)
			<-release
		}
	})
	d.Add(1)
	<-started
	d.Add(2, 3)
	d.Add(4)
	close(release)
	d.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(runs) != 2 || !slices.Equal(runs[0], []int{1}) || !slices.Equal(runs[1], []int{2, 3, 4}) {
		t.Fatalf("runs %v, want [[1] [2 3 4]]", runs)
	}
}
