// Package wait has the one way the service pauses: for a while or until a signal, or until
// its context ends.
package wait

import (
	"context"
	"time"
)

// For sleeps d, or less when ctx ends first: then it returns ctx.Err(), else nil.
func For(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Until blocks until ch is closed (or receives), or ctx ends: then it returns ctx.Err(),
// else nil.
func Until(ctx context.Context, ch <-chan struct{}) error {
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// UntilOrFor blocks until ch is closed (or receives), d has passed, or ctx ends: then it
// returns ctx.Err(), else nil.
func UntilOrFor(ctx context.Context, ch <-chan struct{}, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return nil
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Every calls f every period, the first time one period from now, until ctx ends.
func Every(ctx context.Context, period time.Duration, f func()) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}

// Beside runs fn in a goroutine of its own, on a context that ends with ctx; stop ends that
// context and waits for fn to return (call it before what fn works beside ends).
func Beside(ctx context.Context, fn func(context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(ctx)
	}()
	return func() { cancel(); <-done }
}
