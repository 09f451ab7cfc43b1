package projections

import (
	"context"
	"sync"
	"time"

	"tradesvc/infra/group"
	"tradesvc/infra/kafka/batch"
)

// A projection's consumers (one per claimed partition of each of its topics) hand it batches
// concurrently. Applying each as its own write would cost a transaction per event at low
// load, have them queue on each other's locks at high load, and give a ClickHouse table a
// part per partition per second. The combiner instead applies whatever they have handed in
// as one write (group commit, infra/group): one writer at a time, and writes that grow rather
// than multiply when the load rises. For the trading projection an order's command, outcome
// and facts, and other logins' orders, share transactions; a ClickHouse table gets one insert
// per pace.

// combiner serialises and merges the batches of every consumer of one projection.
type combiner struct {
	// pace, when positive, is the least time between the starts of two rounds (ClickHouse:
	// few large inserts); the batches handed in meanwhile wait and are merged.
	pace time.Duration

	once  sync.Once
	group *group.Group[handIn, error]
}

// handIn is one consumer's batch and the write that applies batches.
type handIn struct {
	msgs  []batch.Message
	apply func(context.Context, []batch.Message) error
}

// combine applies msgs, possibly together with batches handed in meanwhile by the other
// consumers, and returns once they are committed (or the write that held them failed). A
// merged round that fails is applied again one consumer's batch at a time, so that each gets
// the error of its own messages: a message that keeps failing is parked by its consumer
// (batch.Config.MaxAttempts), and another batch must not be charged with it; a fact waiting
// for its command (batch.ErrRetrySoon) holds back only its own partition.
func (c *combiner) combine(ctx context.Context, msgs []batch.Message, apply func(context.Context, []batch.Message) error) error {
	errs, err := c.rounds().Do(ctx, []handIn{{msgs: msgs, apply: apply}})
	if err != nil {
		return err
	}
	return errs[0]
}

// rounds is the group commit, made on first use. Its Wait outlasts the rounds still owed to
// consumers that stopped (a paced one waits out its pace first).
func (c *combiner) rounds() *group.Group[handIn, error] {
	c.once.Do(func() { c.group = group.New(c.round, group.Options{Pace: c.pace}) })
	return c.group
}

// round applies the batches handed in as one write, or each alone when that fails.
func (c *combiner) round(ctx context.Context, ins []handIn) ([]error, error) {
	var all []batch.Message
	for _, in := range ins {
		all = append(all, in.msgs...)
	}
	out := make([]error, len(ins))
	err := ins[0].apply(ctx, all)
	if err == nil || len(ins) == 1 || ctx.Err() != nil {
		for i := range out {
			out[i] = err
		}
		return out, nil
	}
	for i, in := range ins {
		out[i] = in.apply(ctx, in.msgs)
	}
	return out, nil
}
