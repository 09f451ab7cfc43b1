package group

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestEveryCallerGetsItsOwnResultsFromMergedRounds(t *testing.T) {
	var rounds, running, most atomic.Int32
	g := New(func(_ context.Context, items []int) ([]int, error) {
		if n := running.Add(1); n > most.Load() {
			most.Store(n)
		}
		defer running.Add(-1)
		rounds.Add(1)
		time.Sleep(2 * time.Millisecond)
		out := make([]int, len(items))
		for i, v := range items {
			out[i] = v * 10
		}
		return out, nil
	}, Options{})
	var wg sync.WaitGroup
	const callers, calls = 8, 20
	for c := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range calls {
				items := []int{c*1000 + i, c*1000 + i + 500}
				got, err := g.Do(context.Background(), items)
				if err != nil {
					t.Error(err)
					return
				}
				if len(got) != 2 || got[0] != items[0]*10 || got[1] != items[1]*10 {
					t.Errorf("caller %d call %d: got %v for %v", c, i, got, items)
				}
			}
		}()
	}
	wg.Wait()
	if most.Load() != 1 {
		t.Fatalf("%d rounds ran at once", most.Load())
	}
	if rounds.Load() >= callers*calls {
		t.Fatalf("%d rounds for %d calls: nothing was merged", rounds.Load(), callers*calls)
	}
}

func TestARoundsErrorReachesEveryCallerInIt(t *testing.T) {
	release := make(chan struct{})
	boom := errors.New("boom")
	var n atomic.Int32
	g := New(func(_ context.Context, items []int) ([]int, error) {
		if n.Add(1) == 1 {
			<-release
			return items, nil
		}
		return nil, boom
	}, Options{})
	first := make(chan error, 1)
	go func() { _, err := g.Do(context.Background(), []int{1}); first <- err }()
	for n.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	errs := make(chan error, 2)
	for range 2 {
		go func() { _, err := g.Do(context.Background(), []int{2}); errs <- err }()
	}
	time.Sleep(10 * time.Millisecond)
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := <-errs; !errors.Is(err, boom) {
			t.Fatalf("got %v, want the round's error", err)
		}
	}
}

func TestAWaiterThatGivesUpLosesNoRound(t *testing.T) {
	release := make(chan struct{})
	var n atomic.Int32
	g := New(func(_ context.Context, items []int) ([]int, error) {
		if n.Add(1) == 1 {
			<-release
		}
		return items, nil
	}, Options{Detached: true})
	first := make(chan error, 1)
	go func() { _, err := g.Do(context.Background(), []int{1}); first <- err }()
	for n.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error, 1)
	go func() { _, err := g.Do(ctx, []int{2}); gaveUp <- err }()
	time.Sleep(5 * time.Millisecond)
	third := make(chan []int, 1)
	go func() { r, _ := g.Do(context.Background(), []int{3}); third <- r }()
	time.Sleep(5 * time.Millisecond)
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Fatalf("the waiter that gave up got %v", err)
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-third:
		if len(r) != 1 || r[0] != 3 {
			t.Fatalf("third got %v", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the next round never ran: leadership was lost")
	}
}

// A paced group starts a round at most every pace: items handed in meanwhile by any caller
// wait and go in one round.
func TestPacedRoundsMergeWhatArrivesWithinThePace(t *testing.T) {
	var mu sync.Mutex
	var starts []time.Time
	g := New(func(_ context.Context, items []int) ([]int, error) {
		mu.Lock()
		starts = append(starts, time.Now())
		mu.Unlock()
		return items, nil
	}, Options{Pace: 200 * time.Millisecond})
	if _, err := g.Do(context.Background(), []int{0}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * 10 * time.Millisecond)
			if got, err := g.Do(context.Background(), []int{i + 1}); err != nil || len(got) != 1 || got[0] != i+1 {
				t.Errorf("caller %d: %v %v", i, got, err)
			}
		}()
	}
	wg.Wait()
	if len(starts) != 2 {
		t.Fatalf("%d rounds for a first call and 8 handed in within the pace, want 2", len(starts))
	}
	if gap := starts[1].Sub(starts[0]); gap < 190*time.Millisecond {
		t.Fatalf("second round started %v after the first, want at least the pace (200ms)", gap)
	}
}

// Wait returns only once the round a caller who gave up was to lead has run, pace included:
// its owner can stop without a round outliving it.
func TestWaitOutlastsTheRoundOfACallerThatGaveUp(t *testing.T) {
	release := make(chan struct{})
	var ran []int
	var mu sync.Mutex
	g := New(func(_ context.Context, items []int) ([]int, error) {
		mu.Lock()
		first := len(ran) == 0
		ran = append(ran, items...)
		mu.Unlock()
		if first {
			<-release
		}
		return items, nil
	}, Options{Pace: 50 * time.Millisecond})
	first := make(chan error, 1)
	go func() { _, err := g.Do(context.Background(), []int{1}); first <- err }()
	for {
		mu.Lock()
		started := len(ran) > 0
		mu.Unlock()
		if started {
			break
		}
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error, 1)
	go func() { _, err := g.Do(ctx, []int{2}); gaveUp <- err }()
	time.Sleep(5 * time.Millisecond)
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Fatalf("the caller that gave up got %v", err)
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	g.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(ran) != 2 || ran[1] != 2 {
		t.Fatalf("after Wait the rounds ran %v, want [1 2]: the given-up caller's round still pending", ran)
	}
}

// Busy is true exactly while a round runs.
func TestBusyWhileARoundRuns(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	g := New(func(_ context.Context, items []int) ([]int, error) {
		close(started)
		<-release
		return items, nil
	}, Options{})
	if g.Busy() {
		t.Fatal("busy before any round")
	}
	done := make(chan error, 1)
	go func() {
		_, err := g.Do(context.Background(), []int{1})
		done <- err
	}()
	<-started
	if !g.Busy() {
		t.Error("not busy while a round runs")
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if g.Busy() {
		t.Error("busy after the round")
	}
}
