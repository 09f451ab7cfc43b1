package projections

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"tradesvc/events"
	"tradesvc/infra/kafka/batch"
)

// An outcome this process's executor appends on its own (nothing else was decided meanwhile:
// every order at low load) is applied early: the executor hands it over, with the partition
// it is about to land on, before its append (command/executor, ExecutorConfig.Project), and
// says where it landed as soon as the append is acknowledged. The projection decodes and plans
// it meanwhile; if it landed where the partition stands (the offset this process knows as the
// partition's next: every record before it applied), the projection applies it at once as its
// fresh batch of one (applyFresh: one pipeline with the position's advance and the COMMIT). A
// RESULT is answered by that commit, without the consumer's fetch of the outcome (its
// wake-ups of the broker and of this process) and its decode on the way.
//
// Nothing else changes. The outcome is decoded from the very envelope the log holds, so the
// rows are those the consumer would write, and the position moves with them in the same
// transaction, checked where this process expects it (the fenced advance): when the consumer
// then reads the outcome, the position is past it and it is left out, not even decoded
// (Passed), as any redelivery is. Whatever goes otherwise (the append failed or was not
// acknowledged within earlyLanding, it landed elsewhere or behind records not applied yet,
// the fence found the batch not fresh, the commit failed) leaves the outcome to the consumer,
// which applies it as it always did: the early path only ever commits what the consumer would
// have, at the offset it would have. A consumer batch of the same partition waits while an
// early outcome is pending there (awaitEarly), so that it does not find its position moved
// under it.
//
// Measured (docs/benchmarks.md, twenty-seventh session): RESULT's answer p50 0.4–0.8 ms
// sooner at 200/s. Sending the writes before the acknowledgement, to commit right after it,
// gained nothing: on two cores the writes' Postgres work competes with the broker's for the
// CPU, and the append came later by as much as the commit came sooner.

// earlyLanding bounds how long an early outcome waits for its append to be acknowledged;
// later, its consumer applies it.
const earlyLanding = 250 * time.Millisecond

// earlyLimit bounds an early application as a whole: the consumer batches of its partition
// wait for it.
const earlyLimit = 2 * time.Second

// earlyState is what the trading projection knows of its early outcomes.
type earlyState struct {
	mu      sync.Mutex
	pending map[topicPartition]chan struct{} // closed when the partition's early outcome was applied or left
	landed  map[topicPartition]int64         // the offset the partition's last outcome landed at (Appended)
}

// Early begins applying env, an outcome about to be appended to partition of topic (its
// physical name), and returns what the appender calls once it landed (or failed); nil when
// the outcome is not applied early: the projection is replaying, does not know where the
// partition stands, has an early outcome pending there, or has not applied every outcome
// appended there before (Appended). One that would not make a fresh batch is found out
// beside the append, and left to the consumer.
func (t *Trading) Early(ctx context.Context, topic string, partition int32, env events.Envelope) func(int32, int64, error) {
	if t.cfg.Replaying || t.positions == nil {
		return nil
	}
	tp := topicPartition{topic, partition}
	t.early.mu.Lock()
	defer t.early.mu.Unlock()
	if t.early.pending[tp] != nil {
		return nil
	}
	next, known := t.positions.nextOf(tp)
	if last, ok := t.early.landed[tp]; !known || ok && next <= last {
		return nil
	}
	done := make(chan struct{})
	t.early.pending[tp] = done
	landing := make(chan earlyLanded, 1)
	// The rest, from decoding the outcome on, runs beside the append rather than before it.
	go func() {
		defer t.earlyEnded(tp, done)
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), earlyLimit)
		defer cancel()
		err := t.applyEarly(ctx, batch.Message{Topic: topic, Partition: partition, Offset: -1, Timestamp: t.cfg.Now(),
			Envelope: env}, landing)
		if errors.Is(err, errNotPlanned) {
			return // not an outcome that makes a fresh batch: nothing was tried
		}
		if t.cfg.Early != nil {
			t.cfg.Early(err == nil)
		}
		if err != nil {
			t.cfg.Logger.Debug("trading projection: an outcome was not applied early; its consumer applies it",
				"topic", topic, "partition", partition, "err", err)
		}
	}()
	return func(at int32, offset int64, err error) {
		landing <- earlyLanded{partition: at, offset: offset, err: err}
	}
}

// earlyLanded is where an early outcome landed, or why its append failed.
type earlyLanded struct {
	partition int32
	offset    int64
	err       error
}

// errNotPlanned: the outcome would not make a fresh batch of one (or is not an outcome of a
// command); its consumer applies it.
var errNotPlanned = errors.New("projections: the outcome is not a fresh batch of its own")

// errNotEarly: the outcome did not land where its partition stands (or not in time), or its
// transaction failed; its consumer applies it.
var errNotEarly = errors.New("projections: the outcome is not the next of its partition")

// Appended tells the projection where an outcome of this process's executor landed: an
// outcome is applied early only once its consumer applied every outcome appended before it
// (in a deployment, one executor appends each login's outcomes), since an early outcome is
// applied only at the offset where its partition stands.
func (t *Trading) Appended(topic string, partition int32, offset int64) {
	if t.cfg.Replaying || t.positions == nil {
		return
	}
	tp := topicPartition{topic, partition}
	t.early.mu.Lock()
	defer t.early.mu.Unlock()
	if last, ok := t.early.landed[tp]; !ok || offset > last {
		t.early.landed[tp] = offset
	}
}

// earlyEnded forgets the partition's early outcome and wakes the consumer batches waiting for
// it.
func (t *Trading) earlyEnded(tp topicPartition, done chan struct{}) {
	t.early.mu.Lock()
	delete(t.early.pending, tp)
	t.early.mu.Unlock()
	close(done)
}

// applyEarly plans msg's outcome as a fresh batch of one while its append is on its way, and
// applies it once it landed where its partition stands (see above). An outcome that would not
// make a fresh batch (or is not an outcome of a command) is errNotPlanned.
func (t *Trading) applyEarly(ctx context.Context, msg batch.Message, landing <-chan earlyLanded) error {
	ev, err := events.Decode(msg.Envelope)
	if err != nil {
		return errNotPlanned
	}
	out, ok := ev.(*events.ExecutionOutcome)
	if !ok || out.Void || out.CommandType == "" {
		return errNotPlanned
	}
	msg.Event = ev
	items, logins, err := tradingItems([]batch.Message{msg}, t.seen)
	if err != nil || len(items) == 0 {
		return errNotPlanned
	}
	fb, ok := t.planFresh(items)
	if !ok {
		return errNotPlanned
	}
	if t.cfg.Stage != nil {
		t.cfg.Stage("consumed", time.Duration(t.cfg.Now().UnixMilli()-out.DecidedAt)*time.Millisecond)
	}
	var at earlyLanded
	select {
	case at = <-landing:
	case <-time.After(earlyLanding):
		return fmt.Errorf("%w: not acknowledged within %s", errNotEarly, earlyLanding)
	}
	if at.err != nil {
		return fmt.Errorf("%w: the append failed: %w", errNotEarly, at.err)
	}
	next, known := t.positions.nextOf(topicPartition{msg.Topic, msg.Partition})
	if at.partition != msg.Partition || !known || next != at.offset {
		return fmt.Errorf("%w: landed at %d/%d, the partition stands at %d/%d", errNotEarly, at.partition, at.offset,
			msg.Partition, next)
	}
	msg.Offset = at.offset
	msgs := []batch.Message{msg}
	adv, rows, err := t.applyFresh(ctx, msgs, items, logins, fb)
	if err != nil {
		if !errors.Is(err, errNotFresh) { // a fence that failed changed nothing
			_ = t.positions.failed(adv, err) // the consumer reads where the partition stands
		}
		return fmt.Errorf("%w: %w", errNotEarly, err)
	}
	t.freshDone(false)
	t.committed(ctx, msgs, adv, items, rows)
	return nil
}

// awaitEarly waits while an early outcome is pending on a partition of msgs: once it was
// applied or left, the position this process knows there says which.
func (t *Trading) awaitEarly(ctx context.Context, msgs []batch.Message) error {
	for {
		var done chan struct{}
		t.early.mu.Lock()
		for _, m := range msgs {
			if d := t.early.pending[topicPartition{m.Topic, m.Partition}]; d != nil {
				done = d
				break
			}
		}
		t.early.mu.Unlock()
		if done == nil {
			return nil
		}
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
