package projections

import (
	"context"
	"time"

	"tradesvc/infra/kafka/batch"
)

// flushLater makes sure the positions held over msgs are written within about maxHeld even
// when nothing more comes on their partitions: the held messages go through Apply again once
// they are overdue, and that writes them (a partition's stored position is what audits,
// replays and restarts read).
func (t *Trading) flushLater(ctx context.Context, msgs []batch.Message) {
	t.heldMu.Lock()
	defer t.heldMu.Unlock()
	if t.held == nil {
		t.held = map[topicPartition]batch.Message{}
	}
	for _, m := range msgs {
		t.held[topicPartition{m.Topic, m.Partition}] = m
	}
	t.heldCtx = ctx
	if t.flushing {
		return
	}
	t.flushing = true
	time.AfterFunc(maxHeld+50*time.Millisecond, t.flushHeld)
}

// flushHeld applies the held messages again (their consumer's context still running):
// overdue now, their positions are written.
func (t *Trading) flushHeld() {
	t.heldMu.Lock()
	msgs := make([]batch.Message, 0, len(t.held))
	for _, m := range t.held {
		msgs = append(msgs, m)
	}
	t.held = nil
	ctx := t.heldCtx
	t.flushing = false
	t.heldMu.Unlock()
	if len(msgs) == 0 || ctx == nil || ctx.Err() != nil {
		return // the session ended: the next one starts from the stored positions anyway
	}
	if err := t.comb.combine(ctx, msgs, t.apply); err != nil && ctx.Err() == nil {
		t.cfg.Logger.Warn("trading projection: write held positions; the next batch writes them", "err", err)
	}
}
