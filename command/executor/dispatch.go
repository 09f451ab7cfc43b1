package executor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"tradesvc/infra/kafka/batch"
	"tradesvc/infra/wait"
)

// errShutdown marks an operation interrupted by the shutdown (context ended, trade server
// closed): nothing is recorded for it and the batch is not marked, so the next owner of the
// partition finds its "sent" row and reconciles.
var errShutdown = errors.New("executor: shutting down")

// flushTimeout bounds writing the outcomes already decided when a batch is interrupted:
// they are known now, and would otherwise have to be reconciled by the next owner.
const flushTimeout = 5 * time.Second

// handle executes one partition's batch: commands already decided are skipped (one query
// for the batch), accounts are served concurrently, each account's operations in order, and
// each outcome goes to the log as soon as it is decided (flush.go). The batch is done (its
// offset marked) once every outcome is in the log.
func (x *Executor) handle(ctx context.Context, msgs []batch.Message) error {
	ops := x.decodeOperations(msgs)
	if len(ops) == 0 {
		return nil
	}
	// One round trip: what cmd.executions already knows of the batch (a redelivery), and the
	// "sent" record of every operation this batch will send for the first time.
	now := x.cfg.Now()
	for i := range ops {
		x.cfg.Stage("picked", time.Duration(now.UnixMilli()-ops[i].requestedAt)*time.Millisecond)
	}
	// The claim outlives a stop that comes while it runs (within flushTimeout): cut short, its
	// statement may commit all the same, unknown to this executor, which would then neither
	// send nor release those rows, and the next owner would take them for a send this
	// executor died in (IN_DOUBT, then REJECTED "did not execute": an acknowledged order
	// never tried). Finished, its rows are known, and the stop releases them (below).
	cctx, claimed := outliving(ctx, flushTimeout)
	known, recorded, err := x.claim(cctx, msgs[0].Partition, ops, now)
	claimed()
	x.cfg.Stage("claimed", time.Since(now))
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%w: %w", errShutdown, err)
		}
		return err
	}
	var logins []int64
	byLogin := map[int64][]*operation{}
	for i := range ops {
		o := &ops[i]
		if e, ok := known[o.key()]; ok && (e.decided && !x.unsettled(o, e) || !e.decided && x.store.deciding(o.key())) {
			continue // a redelivery: its outcome is in the log (stored, or being stored by this executor)
		}
		if byLogin[o.op.Login] == nil {
			logins = append(logins, o.op.Login)
		}
		byLogin[o.op.Login] = append(byLogin[o.op.Login], o)
	}

	appended := make([][]<-chan error, len(logins))
	var failed atomic.Bool
	var firstErr error
	var errOnce sync.Once
	var unstartedMu sync.Mutex
	unstarted := map[opKey]time.Time{} // recorded by the claim, never started: nothing was sent
	skip := func(ops []*operation) {
		unstartedMu.Lock()
		defer unstartedMu.Unlock()
		for _, o := range ops {
			if at, ok := recorded[o.key()]; ok {
				unstarted[o.key()] = at
			}
		}
	}
	var g errgroup.Group
	g.SetLimit(x.cfg.Concurrency)
	for i, login := range logins {
		g.Go(func() error {
			for j, o := range byLogin[login] {
				// After a failure or once the executor is stopping no new operation starts
				// (a send already under way goes on: sendGrace): the batch comes again, and
				// what was not started is then simply sent, its "sent" row this claim's own
				// (released on a stop).
				if ctx.Err() != nil {
					failed.Store(true)
					errOnce.Do(func() { firstErr = fmt.Errorf("%w: %w", errShutdown, context.Cause(ctx)) })
				}
				if failed.Load() {
					skip(byLogin[login][j:])
					return nil
				}
				var prior *execution
				if e, ok := known[o.key()]; ok {
					prior = &e
				}
				o.recordedAt = recorded[o.key()]
				d, err := x.execute(ctx, o, prior)
				if err != nil {
					failed.Store(true)
					errOnce.Do(func() { firstErr = err })
					skip(byLogin[login][j+1:])
					return nil
				}
				if d.outcome == nil {
					continue // nothing new to say: decided elsewhere, or not settled yet (settle.go)
				}
				appended[i] = append(appended[i], x.flush.push(d))
			}
			return nil
		})
	}
	_ = g.Wait() // the goroutines report through firstErr, so that none cancels the others' sends
	if firstErr != nil && len(unstarted) > 0 {
		if errors.Is(firstErr, errShutdown) {
			// The next owner of the partition would take their rows for a send this
			// executor died in (IN_DOUBT, then "did not execute"): remove them, so that it
			// simply sends them.
			x.store.releaseRows(unstarted)
		} else {
			x.store.rememberClaims(unstarted)
		}
	}
	if firstErr == nil {
		// Every operation is decided; their outcomes are on their way to the log. The
		// partition's next batch need not wait for that: the consumer marks this one once
		// they are appended (batch.Defer), and an append that fails makes it start again
		// from there (the redelivered commands find their sent rows and are reconciled,
		// never sent again).
		all := joinDones(appended)
		if batch.Defer(ctx, all) {
			return nil
		}
		return <-all
	}
	if err := <-joinDones(appended); err != nil {
		return errors.Join(firstErr, err)
	}
	return firstErr
}

// claim is the batch's claim (executions.claim) of the operations the gateway of this process
// did not claim with their records (early.go): those are recorded at their early claim's
// time, and one whose insert failed is claimed again, its row, if stored, this executor's own.
func (x *Executor) claim(ctx context.Context, partition int32, ops []operation, now time.Time) (map[opKey]execution, map[opKey]time.Time, error) {
	sure := func(o *operation) bool { return x.sureToSend(o, now) }
	early := x.cfg.Early.take(ctx, partition, ops)
	x.store.rememberClaims(early.unknown)
	if len(early.claimed) == 0 {
		return x.store.claim(ctx, ops, sure, now)
	}
	x.store.analyzer.Added(len(early.claimed))
	var rest []operation
	var at []int
	for i := range ops {
		if _, ok := early.claimed[ops[i].key()]; !ok {
			rest, at = append(rest, ops[i]), append(at, i)
		}
	}
	known, recorded := map[opKey]execution{}, map[opKey]time.Time{}
	if len(rest) > 0 {
		var err error
		if known, recorded, err = x.store.claim(ctx, rest, sure, now); err != nil {
			// The batch comes again: the rows claimed early are this executor's, never sent.
			x.store.rememberClaims(early.claimed)
			return nil, nil, err
		}
		for j, i := range at { // what the claim learnt of them
			ops[i].void, ops[i].superseded, ops[i].invalid = rest[j].void, rest[j].superseded, rest[j].invalid
		}
	}
	for k, t := range early.claimed {
		recorded[k] = t
	}
	return known, recorded, nil
}

// joinDones yields once every done has: nil, or the first error.
func joinDones(appended [][]<-chan error) <-chan error {
	out := make(chan error, 1)
	go func() {
		var first error
		for _, dones := range appended {
			for _, done := range dones {
				if err := <-done; err != nil && first == nil {
					first = err
				}
			}
		}
		out <- first
	}()
	return out
}

// retry runs f until it succeeds or ctx ends, pausing a little longer after each failure.
func retry(ctx context.Context, f func() error) error {
	for attempt := 1; ; attempt++ {
		err := f()
		if err == nil {
			return nil
		}
		if wait.For(ctx, min(time.Duration(attempt)*100*time.Millisecond, 2*time.Second)) != nil {
			return err
		}
	}
}

// decodeOperations turns a batch into operations, in offset order, each (operation,
// attempt) once: the command handlers may append a command again, unchanged, after an
// append they could not confirm.
func (x *Executor) decodeOperations(msgs []batch.Message) []operation {
	seen := map[opKey]bool{}
	out := make([]operation, 0, len(msgs))
	for _, m := range msgs {
		if m.Event == nil {
			continue
		}
		o, ok := newOperation(m.Envelope, m.Event)
		if !ok || seen[o.key()] {
			continue
		}
		if o.op.OperationID == "" {
			// Nothing could ever ask about it (no operation id, no client record): a
			// producer bug, not sent and reported loudly.
			x.log.Error("command without operation id not sent", "type", m.Envelope.Type, "id", m.Envelope.ID,
				"partition", m.Partition, "offset", m.Offset)
			continue
		}
		seen[o.key()] = true
		out = append(out, o)
	}
	return out
}

// sureToSend reports whether o, not yet recorded, will be sent for the first time: a
// well-formed first attempt within the dispatch window (a later attempt is reconciled by tag
// first, and may not be sent at all).
func (x *Executor) sureToSend(o *operation, now time.Time) bool {
	return o.invalid == nil && o.op.Attempt == 1 && o.inWindow(now.UnixMilli(), x.cfg.DispatchWindow)
}
