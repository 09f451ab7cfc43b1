package wait

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestForSleepsOrStopsWithItsContext(t *testing.T) {
	start := time.Now()
	if err := For(context.Background(), 20*time.Millisecond); err != nil || time.Since(start) < 20*time.Millisecond {
		t.Fatalf("For(20ms) = %v after %v", err, time.Since(start))
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(10*time.Millisecond, cancel)
	start = time.Now()
	if err := For(ctx, time.Hour); !errors.Is(err, context.Canceled) || time.Since(start) > time.Second {
		t.Fatalf("For(1h) with its context cancelled = %v after %v", err, time.Since(start))
	}
}

func TestUntilReturnsOnTheSignalOrWithItsContext(t *testing.T) {
	ch := make(chan struct{})
	time.AfterFunc(10*time.Millisecond, func() { close(ch) })
	if err := Until(context.Background(), ch); err != nil {
		t.Fatalf("Until(closed channel) = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(10*time.Millisecond, cancel)
	if err := Until(ctx, make(chan struct{})); !errors.Is(err, context.Canceled) {
		t.Fatalf("Until with its context cancelled = %v", err)
	}
}

func TestEveryCallsUntilItsContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	Every(ctx, time.Millisecond, func() {
		if calls++; calls == 3 {
			cancel()
		}
	})
	if calls != 3 {
		t.Fatalf("Every called f %d times before its context ended, want 3", calls)
	}
}

// Beside runs its function on a context that ends with the caller's, and stop ends that
// context and returns only once the function has returned.
func TestBesideStopsAndWaitsForItsFunction(t *testing.T) {
	started, returned := make(chan struct{}), make(chan struct{})
	stop := Beside(context.Background(), func(ctx context.Context) {
		close(started)
		<-ctx.Done()
		close(returned)
	})
	<-started
	stop()
	select {
	case <-returned:
	default:
		t.Fatal("stop returned before the function did")
	}
	parent, cancel := context.WithCancel(context.Background())
	ended := make(chan struct{})
	stop = Beside(parent, func(ctx context.Context) { <-ctx.Done(); close(ended) })
	cancel()
	<-ended // the parent's end reaches the function
	stop()
}

func TestUntilOrForReturnsOnTheSignalTheTimeOrItsContext(t *testing.T) {
	ch := make(chan struct{})
	time.AfterFunc(10*time.Millisecond, func() { close(ch) })
	start := time.Now()
	if err := UntilOrFor(context.Background(), ch, time.Hour); err != nil || time.Since(start) > time.Second {
		t.Fatalf("UntilOrFor(closed channel, 1h) = %v after %v", err, time.Since(start))
	}
	start = time.Now()
	if err := UntilOrFor(context.Background(), make(chan struct{}), 20*time.Millisecond); err != nil ||
		time.Since(start) < 20*time.Millisecond {
		t.Fatalf("UntilOrFor(no signal, 20ms) = %v after %v", err, time.Since(start))
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(10*time.Millisecond, cancel)
	if err := UntilOrFor(ctx, make(chan struct{}), time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("UntilOrFor with its context cancelled = %v", err)
	}
}
