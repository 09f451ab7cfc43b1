package projections

import (
	"context"
	"sync"
	"time"

	"tradesvc/infra/kafka/batch"
)

// A projection's consumers (one per claimed partition of each of its topics) hand it batches
// concurrently. Applying each as its own write would cost a transaction per event at low
// load, have them queue on each other's locks at high load, and give a ClickHouse table a
// part per partition per second. The combiner instead applies whatever they have handed in
// as one write (group commit): one writer at a time, and writes that grow rather than
// multiply when the load rises. For the trading projection an order's command, outcome and
// facts, and other logins' orders, share transactions; a ClickHouse table gets one insert
// per pace.

// combiner serialises and merges the batches of every consumer of one projection.
type combiner struct {
	// pace, when positive, is the least time between the starts of two rounds (ClickHouse:
	// few large inserts); the batches handed in meanwhile wait and are merged.
	pace time.Duration

	mu      sync.Mutex
	pending []*handIn
	running bool
	last    time.Time // when the last round started
}

// handIn is one consumer's batch waiting to be applied.
type handIn struct {
	msgs []batch.Message
	done chan error    // the result of the transaction that held msgs
	lead chan struct{} // closed when this consumer is to apply the pending batches itself
}

// combine applies msgs, possibly together with batches handed in meanwhile by the other
// consumers, and returns once they are committed (or the write that held them failed, which
// every consumer in it then retries). The consumer that applies a round hands the next round
// to a waiting one, so no consumer serves the others for long while its own partition waits.
func (c *combiner) combine(ctx context.Context, msgs []batch.Message, apply func(context.Context, []batch.Message) error) error {
	mine := &handIn{msgs: msgs, done: make(chan error, 1), lead: make(chan struct{})}
	c.mu.Lock()
	c.pending = append(c.pending, mine)
	leading := !c.running
	c.running = true
	c.mu.Unlock()
	if !leading {
		select {
		case err := <-mine.done:
			return err
		case <-mine.lead:
		case <-ctx.Done():
			// Not marked: applied again later, idempotently. Leadership handed to this
			// consumer meanwhile must not be lost: pass it on.
			c.abandon(mine)
			return ctx.Err()
		}
	}
	if c.pace > 0 {
		c.mu.Lock()
		wait := time.Until(c.last.Add(c.pace))
		c.mu.Unlock()
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done(): // applied anyway: the others' batches must not wait on this one
			}
			t.Stop()
		}
	}
	c.mu.Lock()
	work := c.pending
	c.pending = nil
	c.last = time.Now()
	c.mu.Unlock()
	var all []batch.Message
	for _, w := range work {
		all = append(all, w.msgs...)
	}
	err := apply(ctx, all)
	if err != nil && len(work) > 1 && ctx.Err() == nil {
		// A merged round failed: apply each consumer's batch alone, so that each gets the
		// error of its own messages (a fact waiting for its command, batch.ErrRetrySoon,
		// holds back only its own partition). A message that keeps failing is parked by
		// its consumer (batch.Config.MaxAttempts); another batch must not be charged with it.
		for _, w := range work {
			w.done <- apply(ctx, w.msgs)
		}
	} else {
		for _, w := range work {
			w.done <- err
		}
	}
	c.handOver()
	return <-mine.done
}

// handOver makes the first waiting consumer the next to apply, or ends the run.
func (c *combiner) handOver() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pending) == 0 {
		c.running = false
		return
	}
	close(c.pending[0].lead)
}

// abandon withdraws a consumer whose context ended while it waited; if it had just been made
// the next to apply, leadership passes on.
func (c *combiner) abandon(h *handIn) {
	c.mu.Lock()
	for i, p := range c.pending {
		if p == h {
			c.pending = append(c.pending[:i], c.pending[i+1:]...)
			break
		}
	}
	c.mu.Unlock()
	select {
	case <-h.lead:
		c.handOver()
	default:
	}
}
