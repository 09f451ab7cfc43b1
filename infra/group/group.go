// Package group runs the work that concurrent callers hand in together: while one round
// runs, what the others hand in waits and goes in the next round, as one unit (group
// commit). A caller alone goes at once; under load rounds grow instead of multiplying.
package group

import (
	"context"
	"fmt"
	"sync"
)

// Group merges the items handed to Do into rounds of run, one round at a time.
type Group[T, R any] struct {
	// run does one round: results[i] answers items[i]. An error fails the whole round. Its
	// context does not end with any caller's: run bounds its own time.
	run func(ctx context.Context, items []T) ([]R, error)

	mu      sync.Mutex
	pending []*call[T, R]
	running bool
}

// New returns a group whose rounds run does.
func New[T, R any](run func(ctx context.Context, items []T) ([]R, error)) *Group[T, R] {
	return &Group[T, R]{run: run}
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
			go func() {
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

// round runs everything pending as one round, then hands the next round to the first caller
// waiting, or ends the run.
func (g *Group[T, R]) round(ctx context.Context) {
	g.mu.Lock()
	work := g.pending
	g.pending = nil
	g.mu.Unlock()
	var all []T
	for _, c := range work {
		all = append(all, c.items...)
	}
	// The round serves every caller in it: the leader's context ending must not fail the
	// others (run bounds its own time).
	results, err := g.run(context.WithoutCancel(ctx), all)
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
