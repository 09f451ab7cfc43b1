package testenv

import (
	"context"
	"sync"
	"testing"
	"time"
)

// Background runs fn in a goroutine with a context derived from ctx, until the returned stop
// is called or the test ends. stop cancels the context and waits for fn to return: the test
// fails if fn returns an error, or does not return within timeout of the cancellation.
func Background(t testing.TB, ctx context.Context, timeout time.Duration, fn func(context.Context) error) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- fn(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("background run returned %v on cancellation, want nil", err)
				}
			case <-time.After(timeout):
				t.Errorf("background run did not return within %v of cancellation", timeout)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}
