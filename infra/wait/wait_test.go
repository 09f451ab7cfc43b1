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
