package group

import (
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
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

// goroutineID is the id of the calling goroutine, from its stack's first line.
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	f := strings.Fields(string(buf))
	if len(f) < 2 {
		return ""
	}
	return f[1]
}

// Runs that follow each other closely share one goroutine (it lingers for the next one), and
// Wait ends a lingering goroutine at once; once a goroutine has lingered and ended, a new Add
// still runs.
func TestDrainRunsInARowShareAGoroutineAndWaitEndsTheLinger(t *testing.T) {
	ran := make(chan string, 4)
	d := NewDrain(func([]int) { ran <- goroutineID() })
	d.linger = time.Hour
	d.Add(1)
	first := <-ran
	d.Add(2)
	if second := <-ran; second != first {
		t.Fatalf("the second run ran on goroutine %s, the first on %s: the goroutine did not linger", second, first)
	}
	waited := make(chan struct{})
	go func() {
		d.Wait()
		close(waited)
	}()
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not end the lingering goroutine")
	}

	d.linger = time.Millisecond
	d.Add(3)
	third := <-ran
	time.Sleep(50 * time.Millisecond) // the goroutine lingers 1ms, then ends
	d.Add(4)
	if fourth := <-ran; fourth == third {
		t.Fatalf("the run after the linger ran on the same goroutine %s", third)
	}
	d.Wait()
}
