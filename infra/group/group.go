// Package group runs the work that concurrent callers hand in together: while one round
// runs, what the others hand in waits and goes in the next round, as one unit (group
// commit). A caller alone goes at once; under load rounds grow instead of multiplying.
package group

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Group merges the items handed to Do into rounds of run, one round at a time.
type Group[T, R any] struct {
	// run does one round: results[i] answers items[i]. An error fails the whole round.
	run func(ctx context.Context, items []T) ([]R, error)
	opt Options

	// handoffs are the goroutines that run a round for a caller that gave up (Wait).
	handoffs sync.WaitGroup

	mu      sync.Mutex
	pending []*call[T, R]
	running bool
	last    time.Time // when the last round started
}

// Options tune a group.
type Options struct {
	// Pace, when positive, is the least time between the starts of two rounds: what is handed
	// in meanwhile waits and goes in one round (few large writes, e.g. ClickHouse inserts).
	Pace time.Duration
	// Detached runs each round with a context that does not end with its leader's (a round
	// serves every caller in it, so one caller giving up must not fail the others); run then
	// bounds its own time. Otherwise a round runs under the context of the caller that leads
	// it (callers that share one lifetime, such as a consumer session's).
	Detached bool
}

// New returns a group whose rounds run does.
func New[T, R any](run func(ctx context.Context, items []T) ([]R, error), opt Options) *Group[T, R] {
	return &Group[T, R]{run: run, opt: opt}
}

type call[T, R any] struct {
	items   []T
	results []R
	err     error
	done    chan struct{} // closed when results or err are set
	lead    chan struct{} // closed when this caller is to run the next round
}

// Do hands items in and returns their results once the round that held them ran. A caller
// whose context ends while it waits gets ctx.Err(), and its items may still run.
func (g *Group[T, R]) Do(ctx context.Context, items []T) ([]R, error) {
	c := &call[T, R]{items: items, done: make(chan struct{}), lead: make(chan struct{})}
	g.mu.Lock()
	g.pending = append(g.pending, c)
	leading := !g.running
	g.running = true
	g.mu.Unlock()
	if !leading {
		select {
		case <-c.done:
			return c.results, c.err
		case <-c.lead:
		case <-ctx.Done():
			// Its items stay in the round; leadership handed to it is passed on when it
			// comes, by whoever runs that round.
			g.handoffs.Add(1)
			go func() {
				defer g.handoffs.Done()
				select {
				case <-c.done:
				case <-c.lead:
					g.round(context.WithoutCancel(ctx))
				}
			}()
			return nil, ctx.Err()
		}
	}
	g.round(ctx)
	<-c.done
	return c.results, c.err
}

// Busy reports whether a round is running: items handed in now would wait for it.
func (g *Group[T, R]) Busy() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.running
}

// Wait returns once the rounds that callers who gave up were to lead have run: a group's
// owner that stops calls it, so that no round outlives it (a paced one waits out its pace).
func (g *Group[T, R]) Wait() { g.handoffs.Wait() }

// round runs everything pending as one round, then hands the next round to the first caller
// waiting, or ends the run.
func (g *Group[T, R]) round(ctx context.Context) {
	if g.opt.Pace > 0 {
		g.mu.Lock()
		wait := time.Until(g.last.Add(g.opt.Pace))
		g.mu.Unlock()
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done(): // run anyway: the others' items must not wait on this caller
			}
			t.Stop()
		}
	}
	g.mu.Lock()
	work := g.pending
	g.pending = nil
	g.last = time.Now()
	g.mu.Unlock()
	var all []T
	for _, c := range work {
		all = append(all, c.items...)
	}
	if g.opt.Detached {
		ctx = context.WithoutCancel(ctx)
	}
	results, err := g.run(ctx, all)
	if err == nil && len(results) != len(all) {
		err = fmt.Errorf("group: %d results for %d items", len(results), len(all))
	}
	i := 0
	for _, c := range work {
		if err != nil {
			c.err = err
		} else {
			c.results = results[i : i+len(c.items) : i+len(c.items)]
		}
		i += len(c.items)
		close(c.done)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.pending) == 0 {
		g.running = false
		return
	}
	close(g.pending[0].lead)
}
